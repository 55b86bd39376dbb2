// Package e2eimport holds the end-to-end tests of mail into tickets: a mail
// delivered in the fake Microsoft Graph (pkg/graphfake) makes Graph's
// change notification reach mailingest through the real Traefik over HTTPS,
// the import worker runs the delta query and hands the mail on over
// MAIL_INBOUND, and tickets makes it a ticket, visible through the gateway;
// an agent's reply goes back out through the fake Graph. The fault tests
// kill the import worker, restart NATS and run replicas. It has its own
// stack (auth, mailingest, renewal, importworker, tickets), so it runs
// beside the other end-to-end packages; its import worker consumes the
// MAIL_IMPORT requests that e2email's tests inspect, which is why the two
// are apart.
package e2eimport

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
	stk      *stack.Stack
	api      *apicontract.Contract
	graph    *graphfake.Server
	backends *e2e.Backends
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "e2eimport setup: "+format+"\n", args...)
		return 1
	}
	b, err := e2e.Prepare(ctx)
	if err != nil {
		return fail("%v", err)
	}
	defer b.Close()
	api = b.Contract

	dataDir, err := os.MkdirTemp("", "sp-e2eimport-data-")
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
		RepoRoot:  b.RepoRoot,
		BinDir:    b.BinDir,
		DataDir:   dataDir,
		Services:  []string{"auth", "mailingest", "renewal", "importworker", "tickets"},
		RateLimit: stack.RateLimit{Average: 10000, Period: time.Second, Burst: 10000},
		Env: map[string][]string{
			"auth":         {"AUTH_LOGIN_MAX_FAILURES_IP=100000", "AUTH_ACCOUNT_CREATE_LIMIT=1000"},
			"mailingest":   fake.Env,
			"renewal":      append(slices.Clone(fake.Env), "RENEWAL_INTERVAL=1s"),
			"importworker": fake.Env,
		},
		Log:      stack.SyncWriter(&stackLog),
		LogLevel: "debug",
		Demo:     &stack.Account{Customer: "Import E2E", Email: "import-e2e@example.com", Password: "pw-" + randid.Hex(12), Name: "Import Admin"},
	})
	if err != nil {
		fmt.Fprint(os.Stderr, stackLog.String())
		return fail("start stack: %v", err)
	}
	return e2e.RunSuite(m, "e2eimport", stk, &stackLog, &backends)
}
