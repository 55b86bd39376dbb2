// Package e2erecovery holds the end-to-end tests of outages and shutdowns:
// the platform runs behind the real Traefik over HTTPS on a PostgreSQL and
// a Redis of the package's own (deploy/stack private servers) and the
// stack's own NATS, so the tests can stop and start all three while
// requests flow, without touching the machine's shared servers. They check
// that every answer during an outage is a fast 503 problem that shows
// nothing of the internals, that every service says it is not ready and
// recovers by itself, that no acknowledged write is lost, and that a
// SIGTERM under load cuts no request.
package e2erecovery

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/apicontract"
)

var (
	stk      *stack.Stack
	api      *apicontract.Contract
	backends *e2ekit.Backends
	pg       *stack.PrivatePostgres
	rdb      *stack.PrivateRedis
)

// services are the ones under test: every HTTP service of the platform.
var services = []string{"auth", "topics", "mailingest", "tickets", "translation"}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var err error
	if pg, err = stack.StartPrivatePostgres(ctx, nil); err != nil {
		fmt.Fprintf(os.Stderr, "e2erecovery setup: private PostgreSQL: %v\n", err)
		return 1
	}
	defer pg.Close()
	if rdb, err = stack.StartPrivateRedis(ctx, nil); err != nil {
		fmt.Fprintf(os.Stderr, "e2erecovery setup: private Redis: %v\n", err)
		return 1
	}
	defer rdb.Close()
	infra := stack.LocalInfraAt(pg.URL("postgres"), rdb.Addr, "")
	s := e2ekit.Suite{Name: "e2erecovery", Services: services, Infra: &infra}
	return e2ekit.Main(m, s, func(r e2ekit.Running) {
		stk, api, backends = r.Stack, r.Contract, r.Backends
	})
}
