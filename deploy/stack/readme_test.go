package stack

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The README's layout block names every package a newcomer will meet (each
// package under pkg/ and under a service's internal/, at any depth), and its
// service table names the role of every schema of the service table: a new
// package or schema that the README does not mention fails here.
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
	tops, err := filepath.Glob(filepath.Join(root, "services", "*", "internal"))
	if err != nil {
		t.Fatal(err)
	}
	dirs := packageDirs(t, append([]string{filepath.Join(root, "pkg")}, tops...))
	if len(dirs) < 60 {
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

// packageDirs lists the directories below tops that hold Go files, testdata
// left out.
func packageDirs(t *testing.T, tops []string) []string {
	t.Helper()
	var dirs []string
	for _, top := range tops {
		err := filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(path, ".go") {
				if dir := filepath.Dir(path); !slices.Contains(dirs, dir) {
					dirs = append(dirs, dir)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return dirs
}

// The README stays what a newcomer reads in five minutes.
func TestREADMEIsShort(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > 260 {
		t.Errorf("README.md has %d lines; keep it to 260 and move details to a service's README or docs/", n)
	}
}

// Every relative link of the READMEs and docs/ points at a file that
// exists, and a #fragment at one of its headings.
func TestREADMELinksResolve(t *testing.T) {
	root := repoRoot(t)
	var docs []string
	for _, pattern := range []string{"README.md", "services/*/README.md", "gateway/README.md", "deploy/README.md", "pkg/ai/README.md", "docs/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, m...)
	}
	if len(docs) < 10 {
		t.Fatalf("found only %d documents", len(docs))
	}
	linkRe := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	links := 0
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		for _, m := range linkRe.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			file, fragment, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
			}
			if info, err := os.Stat(path); err == nil && info.IsDir() {
				continue // a directory: it exists
			}
			text, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("%s links to %s, which does not exist", rel, target)
				continue
			}
			if fragment != "" && !slices.Contains(headingAnchors(string(text)), fragment) {
				t.Errorf("%s links to %s, which has no heading #%s", rel, target, fragment)
			}
		}
	}
	if links == 0 {
		t.Fatal("no relative links found")
	}
}

// headingAnchors returns the anchors GitHub gives the Markdown headings of
// text: lower case, spaces to hyphens, punctuation dropped.
func headingAnchors(text string) []string {
	var out []string
	for line := range strings.Lines(text) {
		heading, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}
