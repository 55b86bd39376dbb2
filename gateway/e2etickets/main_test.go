// Package e2etickets holds the end-to-end tests of the tickets service:
// auth, topics, mailingest and tickets run as binaries behind the real Traefik over HTTPS,
// against a fresh database and unique Redis and NATS prefixes. It runs
// beside gateway/e2e and gateway/e2email (its own stack), so the suites run
// in parallel.
package e2etickets

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/gateway/e2e"
	"supportplatform.dev/pkg/apicontract"
	"supportplatform.dev/pkg/randid"
)

var (
	repoRoot string
	binDir   string
	stk      *stack.Stack
	api      *apicontract.Contract
	// backends are the stack's database as its administrator (for what the
	// API cannot do yet: tickets rows) and its JetStream as the NATS
	// harness user (the EVENTS stream).
	backends *e2e.Backends
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "e2etickets setup: "+format+"\n", args...)
		return 1
	}
	b, err := e2e.Prepare(ctx)
	if err != nil {
		return fail("%v", err)
	}
	defer b.Close()
	repoRoot, binDir, api = b.RepoRoot, b.BinDir, b.Contract

	var stackLog bytes.Buffer
	stk, err = stack.Start(ctx, stack.Options{
		RepoRoot: repoRoot,
		BinDir:   binDir,
		// topics and mailingest answer the tickets service's lookups
		// (topic names and actions, channels).
		Services:  []string{"auth", "topics", "mailingest", "tickets"},
		RateLimit: stack.RateLimit{Average: 10000, Period: time.Second, Burst: 10000},
		Env: map[string][]string{
			"auth": {"AUTH_LOGIN_MAX_FAILURES_IP=100000", "AUTH_ACCOUNT_CREATE_LIMIT=1000"},
		},
		Log:      stack.SyncWriter(&stackLog),
		LogLevel: "debug",
		Demo:     &stack.Account{Customer: "Tickets E2E", Email: "tickets-e2e@example.com", Password: "pw-" + randid.Hex(12), Name: "Tickets Admin"},
	})
	if err != nil {
		fmt.Fprint(os.Stderr, stackLog.String())
		return fail("start stack: %v", err)
	}
	return e2e.RunSuite(m, "e2etickets", stk, &stackLog, &backends)
}
