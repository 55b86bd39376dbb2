package e2ekit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/pkg/apicontract"
)

// Build is what every end-to-end package does before it starts its stack:
// the repository, the one contract (gateway/openapi.yaml), the local
// infrastructure, and every binary and Traefik built into a fresh
// directory.
type Build struct {
	RepoRoot string
	BinDir   string
	Contract *apicontract.Contract
	// Built are the binaries that exist (services being written may not).
	Built []string
}

// Prepare builds; Close removes the binaries.
func Prepare(ctx context.Context) (*Build, error) {
	root, err := stack.FindRepoRoot(".")
	if err != nil {
		return nil, err
	}
	contract, err := apicontract.Load(filepath.Join(root, "gateway", "openapi.yaml"))
	if err != nil {
		return nil, err
	}
	if err := stack.EnsureInfra(ctx); err != nil {
		return nil, fmt.Errorf("infrastructure: %w", err)
	}
	bin, err := os.MkdirTemp("", "sp-e2e-bin-")
	if err != nil {
		return nil, err
	}
	var log bytes.Buffer
	built, err := stack.Build(ctx, root, bin, &log)
	if err != nil {
		_ = os.RemoveAll(bin)
		return nil, fmt.Errorf("build: %w\n%s", err, log.String())
	}
	return &Build{RepoRoot: root, BinDir: bin, Contract: contract, Built: built}, nil
}

// Close removes the built binaries.
func (b *Build) Close() error { return os.RemoveAll(b.BinDir) }

// Tail is the last lines of s (a failed run's stack output).
func Tail(s string, lines int) string {
	n := 0
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			n++
			if n > lines {
				return s[i+1:]
			}
		}
	}
	return s
}

// dumpStackLog keeps a failed run's whole stack output in a file and prints
// its path and the last few of its unexpected lines. Few: a CI log shows a
// window of lines before the package's FAIL line, and the test's own
// failure messages (printed before this) must stay in it.
func DumpStackLog(name, log string) {
	path := ""
	if f, err := os.CreateTemp("", "sp-"+name+"-stack-*.log"); err == nil {
		_, _ = f.WriteString(log)
		_ = f.Close()
		path = f.Name()
	}
	fmt.Fprintf(os.Stderr, "--- stack output of the failed run: %s; its last unexpected lines ---\n%s--- end of the stack output; the test failures are above it ---\n",
		path, Tail(Notable(log), 8))
}

// Notable returns the lines of a stack's output that are not JSON log
// lines of level DEBUG or INFO, nor a request refused because a dependency
// is down (503: what an outage test expects by the hundred).
func Notable(log string) string {
	var b strings.Builder
	for line := range strings.Lines(log) {
		if strings.Contains(line, `"level":"INFO"`) || strings.Contains(line, `"level":"DEBUG"`) ||
			strings.Contains(line, `"msg":"request failed"`) && strings.Contains(line, `"error":"unavailable: `) {
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

// runSuite runs a suite's tests against its started stack, prints the end
// of the stack's output when one failed, stops the stack and returns the
// exit code (non-zero also when the stack did not stop cleanly). backends
// are opened for the tests first (*out) and closed after.
func runSuite(m *testing.M, name string, stk *stack.Stack, stackLog fmt.Stringer, out **Backends, before ...func()) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	b, err := OpenBackends(ctx, stk)
	cancel()
	if err != nil {
		_ = stk.Stop()
		fmt.Fprintf(os.Stderr, "%s setup: backends: %v\n", name, err)
		return 1
	}
	*out = b
	defer b.Close()
	for _, fn := range before {
		fn()
	}
	code := m.Run()
	if err := stk.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: stack did not stop cleanly: %v\n", name, err)
		if code == 0 {
			code = 1
		}
	}
	if code != 0 {
		// Keep the evidence, read once the processes no longer write it.
		DumpStackLog(name, stackLog.String())
	}
	return code
}
