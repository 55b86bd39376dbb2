// Package e2eimport holds the end-to-end tests of mail into tickets: a mail
// delivered in the fake Microsoft Graph (pkg/graphfake) makes Graph's
// change notification reach mailingest through the real Traefik over HTTPS,
// the import worker runs the delta query and hands the mail on over
// MAIL_INBOUND, and tickets makes it a ticket, visible through the gateway;
// an agent's reply goes back out through the fake Graph. The fault tests
// kill the import worker, restart NATS and run replicas. It has its own
// stack (auth, mailingest, renewal, importreply, tickets), so it runs
// beside the other end-to-end packages; its import worker consumes the
// MAIL_IMPORT requests that e2email's tests inspect, which is why the two
// are apart.
package e2eimport

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
	graph    *graphfake.Server
	backends *e2ekit.Backends
)

func TestMain(m *testing.M) {
	s := e2ekit.Suite{Name: "e2eimport", Services: []string{"auth", "mailingest", "renewal", "importreply", "tickets"},
		Graph: []string{"mailingest", "renewal", "importreply"},
		Env:   map[string][]string{"renewal": {"RENEWAL_INTERVAL=1s"}}}
	os.Exit(e2ekit.Main(m, s, func(r e2ekit.Running) {
		stk, api = r.Stack, r.Contract
		graph, backends = r.Graph, r.Backends
	}))
}
