package stack

import (
	"bytes"
	"os"
	"path/filepath"
)

// ConfigDocs returns the READMEs whose tables document the services'
// variables, joined: the repository's (the variables common to every
// service) and each service's own.
func ConfigDocs(root string) ([]byte, error) {
	paths, err := filepath.Glob(filepath.Join(root, "services", "*", "README.md"))
	if err != nil {
		return nil, err
	}
	var docs [][]byte
	for _, p := range append([]string{filepath.Join(root, "README.md")}, paths...) {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		docs = append(docs, data)
	}
	return bytes.Join(docs, []byte("\n")), nil
}
