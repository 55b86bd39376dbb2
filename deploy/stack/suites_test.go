package stack

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The Tests section of gateway/README.md names every end-to-end suite (a
// package gateway/e2e* with tests) and counts them right, so a new suite
// cannot be left out of it.
func TestREADMENamesEverySuite(t *testing.T) {
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "gateway", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Tests\n")
	if !ok {
		t.Fatal("gateway/README.md has no Tests section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	dirs, err := filepath.Glob(filepath.Join(root, "gateway", "e2e*"))
	if err != nil {
		t.Fatal(err)
	}
	suites := 0
	for _, d := range dirs {
		if tests, _ := filepath.Glob(filepath.Join(d, "*_test.go")); len(tests) == 0 {
			continue
		}
		suites++
		name := "gateway/" + filepath.Base(d)
		if !strings.Contains(section, "`"+name+"`") {
			t.Errorf("gateway/README.md's Tests section does not name %s", name)
		}
	}
	words := []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"}
	m := regexp.MustCompile(`runs the (\w+)\s+suites in parallel`).FindStringSubmatch(section)
	if m == nil || suites >= len(words) || m[1] != words[suites] {
		t.Errorf("gateway/README.md's Tests section says %q; there are %d suites", m, suites)
	}
}
