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
	// graph is the fake Microsoft Graph: the admin pages connect a tenant
	// and subscribe folders, the mail tests (live2_test.go) deliver mails
	// into it and read sent replies from it.
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
	s := e2ekit.Suite{Name: "e2econsole", Services: services}
	// Mail in and out (live2_test.go): renewal keeps the subscriptions,
	// importreply imports mails and sends replies through the fake Graph,
	// the assistant prepares replies (its offline engine: no AI_BASE_URL).
	// translation (its offline engine) translates a message into the
	// agent's language.
	s.Services = append(s.Services, "renewal", "importreply", "assistant", "translation")
	s.Graph = []string{"mailingest", "renewal", "importreply"}
	s.Env = map[string][]string{"renewal": {"RENEWAL_INTERVAL=1s"}}
	os.Exit(e2ekit.Main(m, s, func(r e2ekit.Running) {
		stk, api, graph = r.Stack, r.Contract, r.Graph
	}))
}
