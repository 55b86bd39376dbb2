package configtest

import (
	"os"
	"path/filepath"
	"testing"
)

type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatal(...any)          { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }

// A variable counts as documented in the service README or in the
// repository README's Configuration section, not elsewhere in it.
func TestRequireDocumented(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.work", "go 1.26\n")
	write("README.md", "# x\n\n## Configuration\n\n| `COMMON` | `1` | common |\n\n## Other\n\n| `ELSEWHERE` | `2` | not common |\n")
	write("services/s/README.md", "# s\n\n| `OWN` | (empty) | its own |\n")
	readme := filepath.Join(root, "services/s/README.md")
	for _, tc := range []struct {
		name string
		cfg  any
		fail bool
	}{
		{"own and common", struct {
			Own    string `env:"OWN"`
			Common int    `env:"COMMON" default:"1"`
		}{}, false},
		{"outside the Configuration section", struct {
			Elsewhere int `env:"ELSEWHERE" default:"2"`
		}{}, true},
		{"wrong default", struct {
			Own string `env:"OWN" default:"x"`
		}{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			RequireDocumented(r, readme, tc.cfg)
			if r.failed != tc.fail {
				t.Errorf("failed = %v, want %v", r.failed, tc.fail)
			}
		})
	}
}
