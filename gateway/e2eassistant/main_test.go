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
	"net"
	"os"
	"testing"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/apicontract"
)

var (
	stk      *stack.Stack
	api      *apicontract.Contract
	backends *e2ekit.Backends
)

func TestMain(m *testing.M) {
	// An LLM that is down: a port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	deadLLM := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	ai := []string{"AI_BASE_URL=" + deadLLM, "AI_MODEL=down-model", "AI_MAX_RETRIES=0", "AI_TIMEOUT=2s"}
	s := e2ekit.Suite{Name: "e2eassistant", Services: []string{"auth", "topics", "mailingest", "tickets", "assistant"},
		Env: map[string][]string{"tickets": ai, "assistant": ai}}
	os.Exit(e2ekit.Main(m, s, func(r e2ekit.Running) {
		stk, api = r.Stack, r.Contract
		backends = r.Backends
	}))
}
