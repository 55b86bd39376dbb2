// Package e2etrace holds the end-to-end tests of tracing: its stack (auth,
// topics, mailingest, renewal, importreply, tickets and the fake Graph)
// exports every service's and Traefik's spans to an OTLP/HTTP receiver in
// the test process (pkg/telemetry/otlptest), and the tests follow one
// request from Traefik through the service that answered it and over NATS
// into the services that consumed its messages: one trace id, unbroken
// parent links.
package e2etrace

import (
	"fmt"
	"os"
	"testing"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/apicontract"
	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/pkg/telemetry/otlptest"
)

var (
	stk      *stack.Stack
	api      *apicontract.Contract
	graph    *graphfake.Server
	receiver *otlptest.Receiver
)

func TestMain(m *testing.M) {
	var err error
	receiver, err = otlptest.Listen("127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2etrace setup: OTLP receiver:", err)
		os.Exit(1)
	}
	s := e2ekit.Suite{Name: "e2etrace", Services: []string{"auth", "topics", "mailingest", "renewal", "importreply", "tickets"},
		Graph:        []string{"mailingest", "renewal", "importreply"},
		OTLPEndpoint: receiver.URL,
		Env: map[string][]string{
			// Spans leave the services within 200 ms (Traefik keeps the
			// SDK's default of 5 s).
			"*":       {"OTEL_BSP_SCHEDULE_DELAY=200"},
			"renewal": {"RENEWAL_INTERVAL=1s"},
		}}
	code := e2ekit.Main(m, s, func(r e2ekit.Running) {
		stk, api, graph = r.Stack, r.Contract, r.Graph
	})
	receiver.Close()
	os.Exit(code)
}
