package stack

import (
	"bufio"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

const traefikModule = "github.com/traefik/traefik/v3"

// BuildTags are the build tags of every service binary (Build and the
// Dockerfiles). nomsgpack leaves gin's MessagePack binding out, which no
// service uses: its codec (github.com/ugorji/go) is 3 MB of code and
// tables built at start, about 1.5 MB of each process's idle RSS.
const BuildTags = "nomsgpack"

// BuildFlags are the other flags of every service binary's go build, the
// images' own (deploy/service.Dockerfile.tmpl), with BuildEnv: what make
// bench measures is what is shipped. Without cgo the binary links neither
// libc nor the dynamic loader and its resolver is Go's own: 4.3 MB less
// idle RSS per process (topics, the bench's idle-rss). -s -w only drops
// the symbol table and DWARF, which are not loaded (no RSS change); the
// Go stack traces and the profiles keep their function names (pclntab).
var BuildFlags = []string{"-trimpath", "-ldflags=-s -w"}

// BuildEnv is the environment of the service binaries' go build, over the
// caller's.
var BuildEnv = []string{"CGO_ENABLED=0"}

// Build compiles every service binary of the table whose module exists in
// repoRoot into outDir (services not written yet are skipped) and makes sure
// outDir/traefik is the pinned Traefik build. It returns the names of the
// service binaries it built. Progress goes to log (nil: discarded).
func Build(ctx context.Context, repoRoot, outDir string, log io.Writer) ([]string, error) {
	if log == nil {
		log = io.Discard
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	outDir, err := filepath.Abs(outDir)
	if err != nil {
		return nil, err
	}

	var names, pkgs []string
	for _, s := range Services {
		cmdDir := filepath.Join(repoRoot, s.ModuleDir(), filepath.FromSlash(s.CmdPackage()))
		if !fileExists(filepath.Join(repoRoot, s.ModuleDir(), "go.mod")) || !fileExists(cmdDir) {
			fmt.Fprintf(log, "build: skipping %s (%s not written yet)\n", s.Name, cmdDir)
			continue
		}
		names = append(names, s.Name)
		pkgs = append(pkgs, "./"+filepath.ToSlash(filepath.Join(s.ModuleDir(), s.CmdPackage())))
	}

	if len(pkgs) > 0 {
		gowork, cleanup, err := WorkspaceFile(repoRoot)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		fmt.Fprintf(log, "build: go build %s\n", strings.Join(names, " "))
		// One invocation for all binaries: the packages are loaded and
		// compiled once. Each lands in outDir under its directory name.
		args := append([]string{"build", "-tags", BuildTags}, BuildFlags...)
		args = append(args, "-o", outDir+string(filepath.Separator))
		args = append(args, pkgs...)
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = repoRoot
		cmd.Env = append(append(os.Environ(), BuildEnv...), "GOWORK="+gowork)
		cmd.Stdout = log
		cmd.Stderr = log
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("go build %s: %w", strings.Join(pkgs, " "), err)
		}
	}

	traefik, err := EnsureTraefik(ctx, repoRoot, log)
	if err != nil {
		return nil, err
	}
	if filepath.Join(outDir, "traefik") != traefik {
		if err := linkFile(traefik, filepath.Join(outDir, "traefik")); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// WorkspaceFile returns the go.work to build with: the repository's own
// when every module it lists exists, otherwise a temporary copy listing only
// the modules that exist (other services are written in parallel and the go
// command refuses a go.work naming a missing module). cleanup removes the
// temporary copy.
func WorkspaceFile(repoRoot string) (gowork string, cleanup func(), err error) {
	path := filepath.Join(repoRoot, "go.work")
	uses, goLine, err := parseWorkUses(path)
	if err != nil {
		return "", nil, err
	}
	var present []string
	for _, u := range uses {
		if fileExists(filepath.Join(repoRoot, u, "go.mod")) {
			present = append(present, u)
		}
	}
	if len(present) == len(uses) {
		return path, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "sp-gowork-")
	if err != nil {
		return "", nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nuse (\n", goLine)
	for _, u := range present {
		fmt.Fprintf(&b, "\t%s\n", filepath.Join(repoRoot, u))
	}
	b.WriteString(")\n")
	tmp := filepath.Join(dir, "go.work")
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	// Keep the checksums the real workspace has gathered.
	if sum, err := os.ReadFile(path + ".sum"); err == nil {
		_ = os.WriteFile(tmp+".sum", sum, 0o644)
	}
	return tmp, func() { os.RemoveAll(dir) }, nil
}

// parseWorkUses returns the module directories of a go.work file and its go
// directive line.
func parseWorkUses(path string) (uses []string, goLine string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	goLine = "go 1.26.0"
	inBlock := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		switch {
		case line == "":
		case strings.HasPrefix(line, "go "):
			goLine = line
		case line == "use (":
			inBlock = true
		case inBlock && line == ")":
			inBlock = false
		case inBlock:
			uses = append(uses, filepath.Clean(line))
		case strings.HasPrefix(line, "use "):
			uses = append(uses, filepath.Clean(strings.TrimSpace(strings.TrimPrefix(line, "use "))))
		}
	}
	return uses, goLine, sc.Err()
}

// TraefikVersion is the Traefik version gateway/build/go.mod pins.
func TraefikVersion(repoRoot string) (string, error) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "gateway", "build", "go.mod"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "require" {
			f = f[1:]
		}
		if len(f) >= 2 && f[0] == traefikModule {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("gateway/build/go.mod does not require %s", traefikModule)
}

// TraefikCachePath is where the built Traefik binary of version is kept,
// outside the repository so that every clone on the machine (CI runs on a
// fresh clone) reuses it.
func TraefikCachePath(version string) (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".cache", "supportplatform", "traefik-"+version), nil
}

// EnsureTraefik makes repoRoot/bin/traefik the pinned Traefik build and
// returns its path. The binary is built from the gateway/build module (about
// ten minutes cold) only when the machine's cache lacks it; concurrent
// callers wait for one build through a lock file.
func EnsureTraefik(ctx context.Context, repoRoot string, log io.Writer) (string, error) {
	if log == nil {
		log = io.Discard
	}
	version, err := TraefikVersion(repoRoot)
	if err != nil {
		return "", err
	}
	cache, err := TraefikCachePath(version)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(cache), 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(cache + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()

	binPath := filepath.Join(repoRoot, "bin", "traefik")
	if err := checkTraefikBinary(cache, version); err != nil {
		if checkTraefikBinary(binPath, version) == nil {
			// A build already sits in bin/ (made before the cache existed):
			// adopt it instead of building again.
			fmt.Fprintf(log, "traefik: caching %s as %s\n", binPath, cache)
			if err := copyFile(binPath, cache); err != nil {
				return "", err
			}
		} else {
			fmt.Fprintf(log, "traefik: building %s %s into %s (about 10 minutes the first time)\n", traefikModule, version, cache)
			tmp := cache + ".tmp"
			cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", tmp, traefikModule+"/cmd/traefik")
			cmd.Dir = filepath.Join(repoRoot, "gateway", "build")
			cmd.Env = append(os.Environ(), "GOWORK=off")
			cmd.Stdout = log
			cmd.Stderr = log
			if err := cmd.Run(); err != nil {
				os.Remove(tmp)
				return "", fmt.Errorf("build traefik: %w", err)
			}
			if err := os.Rename(tmp, cache); err != nil {
				return "", err
			}
		}
		if err := checkTraefikBinary(cache, version); err != nil {
			return "", err
		}
	}
	if err := linkFile(cache, binPath); err != nil {
		return "", err
	}
	return binPath, nil
}

// checkTraefikBinary verifies from the embedded build information that path
// is the Traefik command built from the pinned module version.
func checkTraefikBinary(path, version string) error {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return err
	}
	if info.Path != traefikModule+"/cmd/traefik" {
		return fmt.Errorf("%s is %s, not traefik", path, info.Path)
	}
	for _, dep := range info.Deps {
		if dep.Path == traefikModule {
			if dep.Version != version {
				return fmt.Errorf("%s is traefik %s, want %s", path, dep.Version, version)
			}
			return nil
		}
	}
	if info.Main.Path == traefikModule && info.Main.Version == version {
		return nil
	}
	return fmt.Errorf("%s: no traefik version in its build information", path)
}

// linkFile makes dst a symbolic link to src unless it already is one.
func linkFile(src, dst string) error {
	if cur, err := os.Readlink(dst); err == nil && cur == src {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp := dst + ".link"
	os.Remove(tmp)
	if err := os.Symlink(src, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(tmp)
		return err
	}
	if err := out.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, dst)
}

func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// FindRepoRoot walks up from dir to the directory holding go.work.
func FindRepoRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if fileExists(filepath.Join(dir, "go.work")) && fileExists(filepath.Join(dir, "gateway")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root (go.work) not found above the working directory")
		}
		dir = parent
	}
}
