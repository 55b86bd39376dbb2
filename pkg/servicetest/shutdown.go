package servicetest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
)

// Call is one HTTP request of a shutdown test and the status it must get.
type Call struct {
	Method, Path, Body, Token string
	Want                      int
}

// RPCClient sends NATS requests to the service under test (and may answer
// the service's own requests to other services).
type RPCClient struct{ Bus *natsbus.Bus }

// Ask sends one request and reports whether a reply (not an error) came.
func Ask[Req, Resp any](ctx context.Context, c *RPCClient, subject string, req Req) error {
	_, err := natsbus.Request[Req, Resp](ctx, c.Bus, subject, req)
	return err
}

// ShutdownCase describes a service's shutdown test.
type ShutdownCase struct {
	Name    string
	Run     Run
	Options Options
	// HTTPLock and RPCLock ("schema.table") are locked in PostgreSQL while
	// the calls are made, so that they are in flight when SIGTERM arrives:
	// the HTTP calls wait on the first, the RPCs on the second, which is
	// released only once the HTTP server has finished, so the RPCs are
	// still running while shutdown drains the subscriptions. Services
	// without a database give Block instead: it makes the HTTP calls wait
	// and returns the function that lets them go on.
	HTTPLock, RPCLock string
	Block             func(t *testing.T) (release func())
	// Serve, when set, runs on the test's NATS client before the service
	// starts (answers to the RPCs the service itself makes).
	Serve func(c *RPCClient) error
	// HTTP is the request made Calls times; RPC the NATS request (nil: the
	// service serves none).
	HTTP func(svc *Service) Call
	RPC  func(ctx context.Context, c *RPCClient) error
	// HTTPCalls and RPCCalls (default 2 each) together hold no more than
	// the pool's 4 connections while they wait, so that each waits on its
	// lock, not for a connection another kind holds.
	HTTPCalls, RPCCalls int
}

// ShutdownTest starts the service, makes HTTP and NATS requests that wait
// on a lock, sends the process SIGTERM (caught by run's context, as main
// does with signal.NotifyContext), checks that the service stops accepting
// new connections while the calls are still waiting, releases them, and
// then requires every call to be answered as if nothing happened, run to
// return nil, and nothing logged at error level (a pool, Redis or NATS used
// after it was closed would be).
func ShutdownTest(t *testing.T, c ShutdownCase) {
	if c.HTTPCalls == 0 {
		c.HTTPCalls = 2
	}
	if c.RPCCalls == 0 {
		c.RPCCalls = 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	o := c.Options
	o.Context = ctx
	o.Env = withDefault(o.Env, "SHUTDOWN_GRACE", "20s")

	pub, priv := newKey(t)
	env := Env(t, c.Name, pub, o.NoDatabase)
	for k, v := range o.Env {
		env[k] = v
	}
	o.Env = env
	client := &RPCClient{}
	var err error
	client.Bus, err = natsbus.Connect(env["NATS_URL"], "shutdown-test", contracts.Names{Prefix: env["NATS_PREFIX"]},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Bus.NC.Close() })
	if c.Serve != nil {
		if err := c.Serve(client); err != nil {
			t.Fatal(err)
		}
	}
	svc := start(t, c.Name, c.Run, o, priv)

	var releaseHTTP, releaseRPC func()
	httpWaiting, rpcWaiting := func() int { return c.HTTPCalls }, func() int { return 1 }
	if c.HTTPLock != "" {
		releaseHTTP, httpWaiting = lockTable(t, adminURL(env), c.HTTPLock)
	} else {
		releaseHTTP = c.Block(t)
	}
	releaseRPC = func() {}
	if c.RPCLock != "" {
		releaseRPC, rpcWaiting = lockTable(t, adminURL(env), c.RPCLock)
	}
	defer releaseHTTP()
	defer releaseRPC()

	type result struct {
		what string
		err  error
	}
	httpResults, rpcResults := make(chan result, c.HTTPCalls), make(chan result, c.RPCCalls)
	httpClient := &http.Client{Timeout: 30 * time.Second}
	waitFor := func(what string, cond func() bool) {
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("the %s did not reach their lock", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for i := 0; i < c.HTTPCalls; i++ {
		call := c.HTTP(svc)
		go func() {
			httpResults <- result{"HTTP " + call.Method + " " + call.Path, doCall(httpClient, svc.URL, call)}
		}()
	}
	waitFor("HTTP calls", func() bool { return httpWaiting() >= c.HTTPCalls })
	if c.RPC != nil {
		for i := 0; i < c.RPCCalls; i++ {
			go func() {
				rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				rpcResults <- result{"RPC", c.RPC(rctx, client)}
			}()
		}
		waitFor("RPCs", func() bool { return rpcWaiting() >= 1 })
	}
	time.Sleep(300 * time.Millisecond) // the rest of the calls reach their handlers

	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	probe := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := probe.Get(svc.URL + "/healthz")
		if err != nil {
			break // the listener is closed: shutdown has begun
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("the service still accepts connections 10 s after SIGTERM")
		}
		time.Sleep(10 * time.Millisecond)
	}
	notYet := func(ch chan result) {
		select {
		case r := <-ch:
			t.Fatalf("%s finished before its lock was released (err %v): the test did not hold it in flight", r.what, r.err)
		default:
		}
	}
	notYet(httpResults)
	notYet(rpcResults)
	collect := func(ch chan result, n int) {
		for i := 0; i < n; i++ {
			select {
			case r := <-ch:
				if r.err != nil {
					t.Errorf("in-flight %s: %v", r.what, r.err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%d in-flight calls not answered", n-i)
			}
		}
	}
	releaseHTTP()
	collect(httpResults, c.HTTPCalls)
	if c.RPC != nil {
		// The HTTP server is done; shutdown now waits on the RPCs.
		time.Sleep(300 * time.Millisecond)
		notYet(rpcResults)
		if svc.Returned() {
			t.Fatal("run returned while RPCs were still being handled")
		}
		releaseRPC()
		collect(rpcResults, c.RPCCalls)
	}
	if err := svc.Wait(30 * time.Second); err != nil {
		t.Fatalf("run after SIGTERM: %v", err)
	}
	for _, line := range strings.Split(svc.Logs(), "\n") {
		if strings.Contains(line, `"level":"ERROR"`) || strings.Contains(line, "closed") {
			t.Errorf("logged during shutdown: %s", line)
		}
	}
}

func withDefault(env map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for kk, vv := range env {
		out[kk] = vv
	}
	return out
}

// adminURL is a connection that may lock the service's tables.
func adminURL(env map[string]string) string {
	if u := env["DATABASE_MIGRATE_URL"]; u != "" {
		return u
	}
	return env["DATABASE_URL"]
}

// lockTable takes an exclusive lock on table until release; waiting
// counts the other sessions waiting for it.
func lockTable(t *testing.T, url, table string) (release func(), waiting func() int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+table+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	probe, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = probe.Close(ctx); _ = conn.Close(ctx) })
	waiting = func() int {
		var n int
		if err := probe.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = $1::regclass`, table).Scan(&n); err != nil {
			t.Errorf("pg_locks: %v", err)
		}
		return n
	}
	return func() { _ = tx.Rollback(ctx) }, waiting
}

func doCall(client *http.Client, base string, c Call) error {
	req, err := http.NewRequest(c.Method, base+c.Path, strings.NewReader(c.Body))
	if err != nil {
		return err
	}
	if c.Body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != c.Want {
		return fmt.Errorf("status %d, want %d: %s", resp.StatusCode, c.Want, body)
	}
	return nil
}
