package stack

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's layout block names every package a newcomer will meet (each
// directory of pkg/ and each internal package of a service), and its
// PostgreSQL section names the role of every schema of the service table:
// a new package or schema that the README does not mention fails here.
func TestREADMELayoutAndSchemas(t *testing.T) {
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	start := strings.Index(readme, "## Layout")
	if start < 0 {
		t.Fatal("README has no Layout section")
	}
	block := readme[start:]
	if end := strings.Index(block, "\nEach service:"); end > 0 {
		block = block[:end]
	}
	named := func(name string) bool {
		return regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).MatchString(block)
	}
	var dirs []string
	for _, pattern := range []string{"pkg/*", "pkg/ai/*", "services/*/internal/*"} {
		matches, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			if goFiles, _ := filepath.Glob(filepath.Join(m, "*.go")); len(goFiles) > 0 {
				dirs = append(dirs, m)
			}
		}
	}
	if len(dirs) < 20 {
		t.Fatalf("found only %d package directories under %s", len(dirs), root)
	}
	for _, d := range dirs {
		if name := filepath.Base(d); !named(name) {
			rel, _ := filepath.Rel(root, d)
			t.Errorf("README's layout block does not name %s", rel)
		}
	}
	for _, s := range Services {
		if s.Schema != "" && !strings.Contains(readme, "`sp_"+s.Schema+"`") {
			t.Errorf("README names no role `sp_%s` for the %s schema (service %s)", s.Schema, s.Schema, s.Name)
		}
	}
}
