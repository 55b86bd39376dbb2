// Package e2e is the main end-to-end suite: the whole platform (every
// service binary and Traefik) runs on free ports against a fresh database,
// and every test talks to it through the gateway over HTTPS with an
// e2ekit.Client that checks each response against gateway/openapi.yaml.
// The harness it shares with the other suites is gateway/internal/e2ekit.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/apicontract"
	"supportplatform.dev/pkg/randid"
)

// Set up once by TestMain for every test of the package.
var (
	repoRoot string
	binDir   string // the binaries built for this run, traefik included
	stk      *stack.Stack
	api      *apicontract.Contract // gateway/openapi.yaml
	// demo is the admin account seeded with `auth bootstrap`.
	demo *stack.Account
	// llm is the OpenAI-compatible server the translation service talks to.
	llm *fakeLLM
)

// TestMain builds every service that exists and Traefik, starts the whole
// stack once against a fresh database with unique Redis and NATS prefixes,
// runs the tests and stops it all (dropping the database).
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "e2e setup: "+format+"\n", args...)
		return 1
	}

	b, err := e2ekit.Prepare(ctx)
	if err != nil {
		return fail("%v", err)
	}
	defer b.Close()
	repoRoot, binDir, api = b.RepoRoot, b.BinDir, b.Contract
	built := b.Built
	if !contains(built, "auth") {
		return fail("services/auth/cmd/auth does not exist; the end-to-end tests need it (built: %v)", built)
	}

	demo = &stack.Account{
		Customer: "E2E Company",
		Email:    "e2e-admin@example.com",
		Password: "pw-" + randid.Hex(12),
		Name:     "E2E Admin",
	}
	llm = startFakeLLM()
	defer llm.srv.Close()

	var stackLog bytes.Buffer
	stk, err = stack.Start(ctx, stack.Options{
		RepoRoot: repoRoot,
		BinDir:   binDir,
		Services: built,
		Demo:     demo,
		// High enough that no test is throttled by accident; the limit
		// itself is tested on a second gateway (TestGatewayRateLimit).
		RateLimit: stack.RateLimit{Average: 10000, Period: time.Second, Burst: 10000},
		Env: map[string][]string{
			// Per-IP login throttling is tested on the service itself; all
			// e2e requests come from one address.
			"auth": {"AUTH_LOGIN_MAX_FAILURES_IP=100000"},
			"translation": {
				"TRANSLATION_PROVIDERS=apertium,openai",
				"AI_BASE_URL=" + llm.srv.URL + "/v1",
				"AI_API_KEY=" + fakeLLMKey,
				"AI_MODEL=e2e-model",
				"AI_MAX_RETRIES=0",
				"AI_TIMEOUT=5s",
			},
		},
		Log:      stack.SyncWriter(&stackLog),
		LogLevel: "debug",
	})
	if err != nil {
		fmt.Fprint(os.Stderr, stackLog.String())
		return fail("start stack: %v", err)
	}

	code := m.Run()

	if err := stk.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: stack did not stop cleanly: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	if code != 0 {
		// Keep the evidence: the output of every process, read once they
		// no longer write it.
		e2ekit.DumpStackLog("e2e", stackLog.String())
	}
	return code
}

// client returns a contract-checking HTTPS client for the test.
func client(t testing.TB) *e2ekit.Client {
	return e2ekit.NewClient(t, stk.HTTPSURL, stk.HTTPClient(), api)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
