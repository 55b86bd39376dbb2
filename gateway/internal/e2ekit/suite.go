package e2ekit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/pkg/apicontract"
	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/pkg/randid"
)

// Suite describes an end-to-end package's stack; Main starts it, runs the
// package's tests against it and stops it.
type Suite struct {
	// Name is the package's ("e2eimport"): messages and the demo customer.
	Name     string
	Services []string
	// Env adds variables per service (after the fake Graph's).
	Env map[string][]string
	// Graph lists the services that talk to a fake Microsoft Graph: Main
	// starts one that trusts the stack's dev CA and gives them its GRAPH_*.
	Graph []string
	// Infra is the PostgreSQL and Redis the stack runs on (nil: the
	// machine's shared ones); the recovery tests give private servers they
	// stop and start.
	Infra *stack.Infra
	// OTLPEndpoint, when set, turns tracing on in every service and in
	// Traefik (stack.Options.OTLPEndpoint).
	OTLPEndpoint string
	// Database is an existing database for the stack, which the suite
	// drops itself (a pooler in front of it is configured before the
	// stack starts); "": a fresh one the stack drops.
	Database string
	// NATSNodes is 3 for a three-node NATS cluster (stack.Options.NATSNodes).
	NATSNodes int
	// Replicas are the processes per service (stack.Options.Replicas);
	// nil: one of each.
	Replicas map[string]int
}

// Running is a started suite, handed to the package before its tests run.
type Running struct {
	Stack    *stack.Stack
	Build    *Build
	Contract *apicontract.Contract
	Backends *Backends
	// Graph is the fake Microsoft Graph (nil when the suite has none).
	Graph *graphfake.Server
}

// Main builds every binary, starts s's stack against a fresh database
// with unique Redis and NATS prefixes, calls ready, runs the tests and
// stops everything; it returns the exit code for os.Exit.
func Main(m *testing.M, s Suite, ready func(Running)) int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, s.Name+" setup: "+format+"\n", args...)
		return 1
	}
	b, err := Prepare(ctx)
	if err != nil {
		return fail("%v", err)
	}
	defer b.Close()
	dataDir, err := os.MkdirTemp("", "sp-"+s.Name+"-data-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(dataDir)
	env := map[string][]string{
		"auth": {"AUTH_LOGIN_MAX_FAILURES_IP=100000", "AUTH_ACCOUNT_CREATE_LIMIT=1000"},
	}
	r := Running{Build: b, Contract: b.Contract}
	if len(s.Graph) > 0 {
		fake, err := stack.StartFakeGraph(dataDir, "127.0.0.1:0")
		if err != nil {
			return fail("fake Graph: %v", err)
		}
		defer fake.Close()
		r.Graph = fake.Server
		for _, svc := range s.Graph {
			env[svc] = slices.Clone(fake.Env)
		}
	}
	for svc, vars := range s.Env {
		env[svc] = append(env[svc], vars...)
	}
	label := strings.TrimPrefix(s.Name, "e2e")
	var stackLog bytes.Buffer
	r.Stack, err = stack.Start(ctx, stack.Options{
		RepoRoot:  b.RepoRoot,
		BinDir:    b.BinDir,
		DataDir:   dataDir,
		Services:  s.Services,
		RateLimit: stack.RateLimit{Average: 10000, Period: time.Second, Burst: 10000},
		Env:       env,
		Log:       stack.SyncWriter(&stackLog),
		LogLevel:  "debug",
		Infra:     s.Infra,
		Database:  s.Database,
		Demo: &stack.Account{Customer: s.Name + " E2E", Email: label + "-e2e@example.com", Password: "pw-" + randid.Hex(12),
			Name: label + " Admin"},
		OTLPEndpoint: s.OTLPEndpoint,
		NATSNodes:    s.NATSNodes,
		Replicas:     s.Replicas,
	})
	if err != nil {
		fmt.Fprint(os.Stderr, stackLog.String())
		return fail("start stack: %v", err)
	}
	return runSuite(m, s.Name, r.Stack, &stackLog, &r.Backends, func() { ready(r) })
}
