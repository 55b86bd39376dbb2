package stack

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseWorkUses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "go.work")
	content := `go 1.26.0

// services
use (
	./deploy
	./services/auth // the first service
	./pkg/ai
)

use ./extra
`
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	uses, goLine, err := parseWorkUses(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"deploy", "services/auth", "pkg/ai", "extra"}
	if strings.Join(uses, ",") != strings.Join(want, ",") || goLine != "go 1.26.0" {
		t.Errorf("uses = %v, go = %q", uses, goLine)
	}
}

func TestWorkspaceFileDropsMissingModules(t *testing.T) {
	root := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.work", "go 1.26.0\n\nuse (\n\t./a\n\t./b\n)\n")
	write("a/go.mod", "module a\n")

	gowork, cleanup, err := WorkspaceFile(root)
	if err != nil {
		t.Fatal(err)
	}
	if gowork == filepath.Join(root, "go.work") {
		t.Fatal("returned the original go.work although ./b has no go.mod")
	}
	uses, _, err := parseWorkUses(gowork)
	if err != nil {
		t.Fatal(err)
	}
	if len(uses) != 1 || uses[0] != filepath.Join(root, "a") {
		t.Errorf("uses = %v, want only %s", uses, filepath.Join(root, "a"))
	}
	cleanup()
	if fileExists(gowork) {
		t.Error("cleanup left the temporary go.work")
	}

	write("b/go.mod", "module b\n")
	gowork, cleanup, err = WorkspaceFile(root)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if gowork != filepath.Join(root, "go.work") {
		t.Errorf("all modules exist, want the original go.work, got %s", gowork)
	}
}

func TestTraefikVersionIsPinned(t *testing.T) {
	root := repoRoot(t)
	v, err := TraefikVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v, "v3.") {
		t.Errorf("pinned traefik %q is not a v3 release", v)
	}
	cache, err := TraefikCachePath(v)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(cache) != "traefik-"+v || !strings.Contains(cache, filepath.Join(".cache", "supportplatform")) {
		t.Errorf("cache path %s", cache)
	}
}

func TestCheckTraefikBinaryRejectsOtherBinaries(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkTraefikBinary(self, "v3.6.12"); err == nil {
		t.Error("the test binary passed for traefik")
	}
	if err := checkTraefikBinary(filepath.Join(t.TempDir(), "missing"), "v3.6.12"); err == nil {
		t.Error("a missing file passed for traefik")
	}
}

func TestEnsureTraefikLinksThePinnedBuild(t *testing.T) {
	root := repoRoot(t)
	path, err := EnsureTraefik(t.Context(), root, testLog(t))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := TraefikVersion(root)
	if err := checkTraefikBinary(path, v); err != nil {
		t.Fatal(err)
	}
	cache, _ := TraefikCachePath(v)
	if target, err := os.Readlink(path); err != nil || target != cache {
		t.Errorf("bin/traefik -> %q (%v), want a link to %s", target, err, cache)
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func testLog(t *testing.T) tWriter { return tWriter{t} }

// TestBuildTagsLeaveMessagePackOut lists what each service binary links with
// BuildTags: gin's MessagePack codec must not be among it (see BuildTags).
func TestBuildTagsLeaveMessagePackOut(t *testing.T) {
	root := repoRoot(t)
	gowork, cleanup, err := WorkspaceFile(root)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	var pkgs []string
	for _, s := range Services {
		if _, err := os.Stat(filepath.Join(root, s.ModuleDir())); err == nil {
			pkgs = append(pkgs, "./"+filepath.ToSlash(filepath.Join(s.ModuleDir(), s.CmdPackage())))
		}
	}
	list := func(tags string) string {
		t.Helper()
		cmd := exec.Command("go", append([]string{"list", "-deps", "-tags", tags}, pkgs...)...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOWORK="+gowork)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		return string(out)
	}
	const codec = "github.com/ugorji/go/codec\n"
	if !strings.Contains(list(""), codec) {
		t.Fatalf("without build tags the services do not link %s: the check below proves nothing", codec)
	}
	if strings.Contains(list(BuildTags), codec) {
		t.Fatalf("with -tags %s a service still links %s", BuildTags, codec)
	}
}

// TestBuildMatchesTheImages: Build compiles the service binaries as their
// images do (the Dockerfile template's go build), so that make bench
// measures the binaries that are shipped.
func TestBuildMatchesTheImages(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), filepath.FromSlash(dockerfileTemplate)))
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for l := range strings.SplitSeq(string(data), "\n") {
		if strings.Contains(l, "go build") {
			line = l
		}
	}
	if line == "" {
		t.Fatal("no go build in the Dockerfile template")
	}
	want := append(append([]string{}, BuildEnv...), BuildFlags...)
	for i, w := range want {
		if k, v, ok := strings.Cut(w, "="); ok && strings.HasPrefix(k, "-ldflags") {
			want[i] = k + `="` + v + `"`
		}
	}
	want = append(want, "-tags {{.Tags}}")
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("the Dockerfile template's go build lacks %s: %s", w, strings.TrimSpace(line))
		}
	}
}
