// Package e2edocs holds the end-to-end tests of the API reference page:
// auth and docs run as binaries behind the real Traefik over HTTPS (its own
// stack, beside the other suites), and headless Chromium opens /docs through
// the gateway.
package e2edocs

import (
	"os"
	"testing"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/apicontract"
)

var (
	stk      *stack.Stack
	api      *apicontract.Contract
	repoRoot string
)

func TestMain(m *testing.M) {
	// auth because every suite seeds its demo customer; docs needs nothing
	// else.
	s := e2ekit.Suite{Name: "e2edocs", Services: []string{"auth", "docs"}}
	os.Exit(e2ekit.Main(m, s, func(r e2ekit.Running) {
		stk, api, repoRoot = r.Stack, r.Contract, r.Build.RepoRoot
	}))
}
