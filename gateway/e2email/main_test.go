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
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"supportplatform.dev/deploy/stack"
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
	graphURL string
)

// Credentials of the Entra app the fake accepts.
const (
	graphClientID     = "e2e-mail-app"
	graphClientSecret = "e2e-mail-secret"
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

// lazyTransport sends through the stack's TLS client once the stack is up:
// the fake Graph must exist before the services (they get its URL) but calls
// the gateway, whose certificate exists only after Start.
type lazyTransport struct {
	rt atomic.Pointer[http.RoundTripper]
}

func (l *lazyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt := l.rt.Load()
	if rt == nil {
		return nil, fmt.Errorf("stack not started")
	}
	return (*rt).RoundTrip(r)
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "e2email setup: "+format+"\n", args...)
		return 1
	}
	var err error
	if repoRoot, err = stack.FindRepoRoot("."); err != nil {
		return fail("%v", err)
	}
	if api, err = apicontract.Load(filepath.Join(repoRoot, "gateway", "openapi.yaml")); err != nil {
		return fail("%v", err)
	}
	if err := stack.EnsureInfra(ctx); err != nil {
		return fail("infrastructure: %v", err)
	}
	if binDir, err = os.MkdirTemp("", "sp-e2email-bin-"); err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(binDir)
	var buildLog bytes.Buffer
	if _, err := stack.Build(ctx, repoRoot, binDir, &buildLog); err != nil {
		return fail("build: %v\n%s", err, buildLog.String())
	}

	lazy := &lazyTransport{}
	graph = graphfake.New(graphfake.Options{ClientID: graphClientID, ClientSecret: graphClientSecret,
		HTTPClient: &http.Client{Transport: lazy, Timeout: 10 * time.Second}})
	graphSrv := httptest.NewServer(graph)
	defer graphSrv.Close()
	graphURL = graphSrv.URL
	mailEnv := []string{
		"GRAPH_CLIENT_ID=" + graphClientID,
		"GRAPH_CLIENT_SECRET=" + graphClientSecret,
		"GRAPH_TOKEN_URL=" + graphURL + "/{tenant}/oauth2/v2.0/token",
		"GRAPH_BASE_URL=" + graphURL + "/v1.0",
	}

	var stackLog bytes.Buffer
	stk, err = stack.Start(ctx, stack.Options{
		RepoRoot:  repoRoot,
		BinDir:    binDir,
		Services:  []string{"auth", "mailingest", "renewal"},
		RateLimit: stack.RateLimit{Average: 10000, Period: time.Second, Burst: 10000},
		Env: map[string][]string{
			"auth":       {"AUTH_LOGIN_MAX_FAILURES_IP=100000", "AUTH_ACCOUNT_CREATE_LIMIT=1000"},
			"mailingest": mailEnv,
			// A round every second, so tests see the job's effects quickly.
			"renewal": append(mailEnv, "RENEWAL_INTERVAL=1s"),
		},
		Log:      stack.SyncWriter(&stackLog),
		LogLevel: "debug",
		Demo:     &stack.Account{Customer: "Mail E2E", Email: "mail-e2e@example.com", Password: "pw-" + randid.Hex(12), Name: "Mail Admin"},
	})
	if err != nil {
		fmt.Fprint(os.Stderr, stackLog.String())
		return fail("start stack: %v", err)
	}
	rt := stk.HTTPClient().Transport
	lazy.rt.Store(&rt)
	closeBackends, err := openBackends(ctx)
	if err != nil {
		_ = stk.Stop()
		return fail("backends: %v", err)
	}
	defer closeBackends()

	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "--- stack output (failed run) ---\n%s", tail(stackLog.String(), 300))
	}
	if err := stk.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "e2email: stack did not stop cleanly: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func tail(s string, lines int) string {
	n := 0
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			n++
			if n > lines {
				return s[i+1:]
			}
		}
	}
	return s
}
