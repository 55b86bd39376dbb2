// Package e2email holds the end-to-end tests of the mail context: auth,
// mailingest and renewal run as binaries behind the real Traefik over HTTPS,
// against a fresh database, unique Redis and NATS prefixes, and a fake
// Microsoft Graph (pkg/graphfake) that performs the validation handshake
// through the gateway and posts notifications to it, as Graph does. It runs
// beside gateway/e2e (its own stack), so the two suites run in parallel.
package e2email

import (
	"os"
	"testing"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/apicontract"
	"supportplatform.dev/pkg/graphfake"
)

var (
	stk      *stack.Stack
	api      *apicontract.Contract
	repoRoot string
	binDir   string
	graph    *graphfake.Server
)

func TestMain(m *testing.M) {
	s := e2ekit.Suite{Name: "e2email", Services: []string{"auth", "mailingest", "renewal"},
		Graph: []string{"mailingest", "renewal"},
		// A round every second, so tests see the job's effects quickly; a
		// subscription create gives up after 5 s (TestTimedOutCreateLeavesNoOrphan).
		Env: map[string][]string{"renewal": {"RENEWAL_INTERVAL=1s", "GRAPH_SUBSCRIPTION_CREATE_TIMEOUT=5s"},
			"mailingest": {"GRAPH_SUBSCRIPTION_CREATE_TIMEOUT=5s"}}}
	os.Exit(e2ekit.Main(m, s, func(r e2ekit.Running) {
		stk, api = r.Stack, r.Contract
		repoRoot, binDir, graph, backends = r.Build.RepoRoot, r.Build.BinDir, r.Graph, r.Backends
	}))
}
