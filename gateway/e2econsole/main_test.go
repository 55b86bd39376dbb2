// Package e2econsole holds the end-to-end tests of the agent console: auth,
// topics, mailingest (channels, with a fake Microsoft Graph), tickets, live
// and console run as binaries behind the real Traefik over HTTPS (their own
// stack, beside the other suites), and headless Chromium (Debian's package)
// uses the console through the gateway as an agent or admin would.
package e2econsole

import (
	"os"
	"testing"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/apicontract"
	"supportplatform.dev/pkg/graphfake"
)

var (
	stk *stack.Stack
	api *apicontract.Contract
	// graph is the fake Microsoft Graph of mailingest (the admin pages
	// connect a tenant and subscribe folders).
	graph *graphfake.Server
)

func TestMain(m *testing.M) {
	// topics and mailingest answer the tickets service's lookups (and
	// the inbox's topic filter); live
	// streams the events the console shows without a reload.
	services := []string{"auth", "topics", "mailingest", "tickets", "console"}
	if _, ok := stack.LookupService("live"); ok {
		services = append(services, "live")
	}
	s := e2ekit.Suite{Name: "e2econsole", Services: services, Graph: []string{"mailingest"}}
	os.Exit(e2ekit.Main(m, s, func(r e2ekit.Running) {
		stk, api, graph = r.Stack, r.Contract, r.Graph
	}))
}
