// Package e2eassistant holds the end-to-end tests of the AI assistant: an
// end user's message created through the gateway gets its topics detected,
// its prompt documents ranked and a reply prepared by the assistant binary
// (consuming the tickets events from JetStream), visible through the API;
// send-reply, detect-topics with its automation, summaries and the feedback
// report. The stack (auth, topics, mailingest, tickets, assistant) is its
// own, apart from e2etickets, whose tests assign topics by hand and count
// their events exactly. The configured LLM is down for the whole suite
// (nothing listens at AI_BASE_URL): every result must come from the offline
// engine, and nothing may be lost.
package e2eassistant

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/gateway/e2e"
	"supportplatform.dev/pkg/apicontract"
	"supportplatform.dev/pkg/randid"
)

var (
	stk      *stack.Stack
	api      *apicontract.Contract
	backends *e2e.Backends
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "e2eassistant setup: "+format+"\n", args...)
		return 1
	}
	b, err := e2e.Prepare(ctx)
	if err != nil {
		return fail("%v", err)
	}
	defer b.Close()
	api = b.Contract

	dataDir, err := os.MkdirTemp("", "sp-e2eassistant-data-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(dataDir)
	// An LLM that is down: a port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail("%v", err)
	}
	deadLLM := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	ai := []string{"AI_BASE_URL=" + deadLLM, "AI_MODEL=down-model", "AI_MAX_RETRIES=0", "AI_TIMEOUT=2s"}

	var stackLog bytes.Buffer
	stk, err = stack.Start(ctx, stack.Options{
		RepoRoot:  b.RepoRoot,
		BinDir:    b.BinDir,
		DataDir:   dataDir,
		Services:  []string{"auth", "topics", "mailingest", "tickets", "assistant"},
		RateLimit: stack.RateLimit{Average: 10000, Period: time.Second, Burst: 10000},
		Env: map[string][]string{
			"auth":      {"AUTH_LOGIN_MAX_FAILURES_IP=100000", "AUTH_ACCOUNT_CREATE_LIMIT=1000"},
			"tickets":   ai,
			"assistant": ai,
		},
		Log:      stack.SyncWriter(&stackLog),
		LogLevel: "debug",
		Demo:     &stack.Account{Customer: "Assistant E2E", Email: "assistant-e2e@example.com", Password: "pw-" + randid.Hex(12), Name: "Assistant Admin"},
	})
	if err != nil {
		fmt.Fprint(os.Stderr, stackLog.String())
		return fail("start stack: %v", err)
	}
	return e2e.RunSuite(m, "e2eassistant", stk, &stackLog, &backends)
}
