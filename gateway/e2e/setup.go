package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

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
