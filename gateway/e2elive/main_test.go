// Package e2elive holds the end-to-end tests of the live service: auth,
// mailingest, tickets and live run as binaries behind the real Traefik over
// HTTPS (its own stack, beside the other suites), and the tests hold event
// streams open through the gateway while they change tickets through the
// API.
package e2elive

import (
	"os"
	"testing"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/apicontract"
)

var (
	stk *stack.Stack
	api *apicontract.Contract
)

func TestMain(m *testing.M) {
	// mailingest answers tickets' channel lookups.
	s := e2ekit.Suite{Name: "e2elive", Services: []string{"auth", "mailingest", "tickets", "live"}}
	os.Exit(e2ekit.Main(m, s, func(r e2ekit.Running) {
		stk, api = r.Stack, r.Contract
	}))
}
