// Package e2etickets holds the end-to-end tests of the tickets service:
// auth, topics, mailingest and tickets run as binaries behind the real Traefik over HTTPS,
// against a fresh database and unique Redis and NATS prefixes. It runs
// beside gateway/e2e and gateway/e2email (its own stack), so the suites run
// in parallel.
package e2etickets

import (
	"os"
	"strconv"
	"testing"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/apicontract"
)

var (
	stk      *stack.Stack
	api      *apicontract.Contract
	repoRoot string
	binDir   string
	backends *e2ekit.Backends
)

func TestMain(m *testing.M) {
	// topics and mailingest answer the tickets service's lookups (topic
	// names and actions, channels).
	// The attachment quota is small enough to fill in a test (TestAttQuota)
	// and holds the largest upload of another test (25 MiB).
	s := e2ekit.Suite{Name: "e2etickets", Services: []string{"auth", "topics", "mailingest", "tickets"},
		Env: map[string][]string{"tickets": {"ATTACHMENT_QUOTA_BYTES=" + strconv.Itoa(attQuota)}}}
	os.Exit(e2ekit.Main(m, s, func(r e2ekit.Running) {
		stk, api = r.Stack, r.Contract
		repoRoot, binDir, backends = r.Build.RepoRoot, r.Build.BinDir, r.Backends
	}))
}
