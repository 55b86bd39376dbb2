// Package e2epgbouncer runs the services with a database through a real
// PgBouncer (Debian's, installed by the test when missing) in transaction
// mode: every service's DATABASE_URL is a transaction pool of its own role
// (DATABASE_POOLER=transaction), DATABASE_SESSION_URL a session-mode alias
// of the same database for the outbox relays' LISTEN and importreply's
// folder locks, and the migrations go to PostgreSQL directly. The test
// calls the main routes through the gateway with concurrency (login,
// accounts, topics, channels, end users, tickets and messages, mail
// imported from the fake Microsoft Graph) and requires no error, every
// event on NATS, and fewer server connections than clients; it prints the
// figures.
package e2epgbouncer

import (
	"context"
	"fmt"
	"os"
	"slices"
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
	pgb      *stack.PgBouncer
)

// services are the binaries with a schema (assistant aside: its Apertium
// packages are e2eassistant's), all of them through the pooler.
var services = []string{"auth", "topics", "mailingest", "renewal", "importreply", "tickets"}

// poolSize is pgbouncer's server connections per database and role: fewer
// than the clients' pools together (4 or more per process), so the run
// shows the multiplexing.
const poolSize = 3

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	in := stack.LocalInfra(os.Stderr)
	if err := in.Ensure(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "e2epgbouncer setup:", err)
		return 1
	}
	db, err := in.CreateDatabase(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2epgbouncer setup:", err)
		return 1
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := in.DropDatabase(ctx, db); err != nil {
			fmt.Fprintln(os.Stderr, "e2epgbouncer: drop database:", err)
		}
	}()
	env := map[string][]string{}
	var roles []string
	for _, name := range services {
		svc, _ := stack.LookupService(name)
		if role := svc.DatabaseRole(); role != "" && !slices.Contains(roles, role) {
			roles = append(roles, role)
		}
	}
	pgb, err = stack.StartPgBouncer(ctx, in, stack.PgBouncerOptions{Database: db, Users: roles, PoolSize: poolSize})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2epgbouncer setup: pgbouncer:", err)
		return 1
	}
	// After the stack (Main stops it before returning), before the
	// database is dropped.
	defer func() {
		if err := pgb.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2epgbouncer: pgbouncer did not stop cleanly:", err)
		}
	}()
	for _, name := range services {
		svc, _ := stack.LookupService(name)
		role := svc.DatabaseRole()
		env[name] = []string{"DATABASE_POOLER=transaction", "DATABASE_URL=" + pgb.URL(role), "DATABASE_SESSION_URL=" + pgb.SessionURL(role)}
	}
	s := e2ekit.Suite{Name: "e2epgbouncer", Services: services, Database: db, Env: env,
		Graph: []string{"mailingest", "renewal", "importreply"}}
	return e2ekit.Main(m, s, func(r e2ekit.Running) {
		stk, api, graph, backends = r.Stack, r.Contract, r.Graph, r.Backends
	})
}
