// Package e2ecluster holds the end-to-end fault test of the NATS cluster:
// the stack runs NATS as three nats-servers with routes (every stream with
// three replicas), mail flows from the fake Microsoft Graph through the
// real Traefik to mailingest, the import worker and tickets, and the
// JetStream meta leader and then the MAIL_INBOUND stream's leader are
// killed with SIGKILL and started again in the middle of a burst. It has
// its own stack (auth, mailingest, renewal, importreply, tickets), so it
// runs beside the other end-to-end packages.
package e2ecluster

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
	s := e2ekit.Suite{Name: "e2ecluster", Services: []string{"auth", "mailingest", "renewal", "importreply", "tickets"},
		Graph: []string{"mailingest", "renewal", "importreply"}, NATSNodes: 3}
	os.Exit(e2ekit.Main(m, s, func(r e2ekit.Running) {
		stk, api = r.Stack, r.Contract
		graph, backends = r.Graph, r.Backends
	}))
}
