// Package configtest holds the test check that keeps the READMEs' config
// tables true.
package configtest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"supportplatform.dev/pkg/config"
)

// RequireDocumented fails t when a variable of cfg has a table row neither
// in the service README at path nor in the Configuration section of the
// repository README (the variables common to every service), so each
// variable is documented once, where a reader of that service looks.
func RequireDocumented(t testing.TB, path string, cfg any) {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	common, err := CommonSection(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if missing := config.Undocumented(string(doc)+"\n"+common, cfg); len(missing) > 0 {
		t.Fatalf("neither the config tables in %s nor the repository README's Configuration section list %v", path, missing)
	}
}

// CommonSection returns the Configuration section of the README.md beside
// the go.work found in dir or a parent of it.
func CommonSection(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("configtest: no go.work above the README")
		}
		dir = parent
	}
	data, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		return "", err
	}
	_, section, ok := strings.Cut(string(data), "\n## Configuration\n")
	if !ok {
		return "", errors.New("configtest: the repository README has no Configuration section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return section, nil
}
