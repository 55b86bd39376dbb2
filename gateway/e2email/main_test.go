// Package e2email holds the end-to-end tests of the mail context: auth,
// mailingest and renewal run as binaries behind the real Traefik over HTTPS,
// against a fresh database, unique Redis and NATS prefixes, and a fake
// Microsoft Graph (pkg/graphfake) that performs the validation handshake
// through the gateway and posts notifications to it, as Graph does. It runs
// beside gateway/e2e (its own stack), so the two suites run in parallel.
package e2email

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/gateway/e2e"
	"supportplatform.dev/pkg/apicontract"
	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/pkg/randid"
)

var (
	repoRoot string
	binDir   string
	stk      *stack.Stack
	api      *apicontract.Contract
	graph    *graphfake.Server
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "e2email setup: "+format+"\n", args...)
		return 1
	}
	b, err := e2e.Prepare(ctx)
	if err != nil {
		return fail("%v", err)
	}
	defer b.Close()
	repoRoot, binDir, api = b.RepoRoot, b.BinDir, b.Contract

	// The fake Graph trusts the dev CA of the stack's data directory.
	dataDir, err := os.MkdirTemp("", "sp-e2email-data-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(dataDir)
	fake, err := stack.StartFakeGraph(dataDir, "127.0.0.1:0")
	if err != nil {
		return fail("fake Graph: %v", err)
	}
	defer fake.Close()
	graph = fake.Server

	var stackLog bytes.Buffer
	stk, err = stack.Start(ctx, stack.Options{
		RepoRoot:  repoRoot,
		BinDir:    binDir,
		DataDir:   dataDir,
		Services:  []string{"auth", "mailingest", "renewal"},
		RateLimit: stack.RateLimit{Average: 10000, Period: time.Second, Burst: 10000},
		Env: map[string][]string{
			"auth":       {"AUTH_LOGIN_MAX_FAILURES_IP=100000", "AUTH_ACCOUNT_CREATE_LIMIT=1000"},
			"mailingest": fake.Env,
			// A round every second, so tests see the job's effects quickly.
			"renewal": append(slices.Clone(fake.Env), "RENEWAL_INTERVAL=1s"),
		},
		Log:      stack.SyncWriter(&stackLog),
		LogLevel: "debug",
		Demo:     &stack.Account{Customer: "Mail E2E", Email: "mail-e2e@example.com", Password: "pw-" + randid.Hex(12), Name: "Mail Admin"},
	})
	if err != nil {
		fmt.Fprint(os.Stderr, stackLog.String())
		return fail("start stack: %v", err)
	}
	return e2e.RunSuite(m, "e2email", stk, &stackLog, &backends)
}
