// Package e2escale runs every HTTP service as two processes (three of the
// renewal job and the import worker) behind the gateway, with no sticky
// sessions: a login on one replica and its token on another, an
// idempotency key replayed on the other replica, a rate limit counted
// across replicas, the signing keys the same everywhere, the outbox relays
// publishing each event once; and a rolling restart under a mixed load
// through the gateway, one replica of every service after another with
// SIGTERM and a start on the same port: no failed request, no lost event,
// no duplicate ticket. Its stack is its own, so it runs beside the other
// end-to-end packages.
package e2escale

import (
	"net/http"
	"os"
	"testing"
	"time"

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

// replicas are the processes per service.
var replicas = map[string]int{"*": 2, "renewal": 3, "importreply": 3}

func TestMain(m *testing.M) {
	s := e2ekit.Suite{Name: "e2escale", Replicas: replicas,
		Graph: []string{"mailingest", "renewal", "importreply"}}
	os.Exit(e2ekit.Main(m, s, func(r e2ekit.Running) {
		stk, api, graph, backends = r.Stack, r.Contract, r.Graph, r.Backends
	}))
}

// client is a contract-checking client of the gateway.
func client(t testing.TB) *e2ekit.Client {
	return e2ekit.NewClient(t, stk.HTTPSURL, stk.HTTPClient(), api)
}

// direct is a contract-checking client of one replica's own port (no
// gateway in between).
func direct(t testing.TB, r *stack.Replica) *e2ekit.Client {
	return e2ekit.NewClient(t, r.URL, &http.Client{Timeout: 30 * time.Second}, api)
}

// replicasOf returns the processes of a started service, failing the test
// unless there are want of them.
func replicasOf(t testing.TB, service string, want int) []*stack.Replica {
	t.Helper()
	rs := stk.Replicas(service)
	if len(rs) != want {
		t.Fatalf("%s has %d processes, want %d", service, len(rs), want)
	}
	return rs
}
