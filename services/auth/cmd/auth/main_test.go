package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/nats-io/nats.go"

	"supportplatform.dev/pkg/apicontract"
	"supportplatform.dev/pkg/config/configtest"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/services/auth/internal/httpapi"
)

type testAuth struct {
	base   string
	env    map[string]string
	cancel context.CancelFunc
	done   chan error
}

func randHex() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func startAuth(t *testing.T, extra map[string]string) *testAuth {
	t.Helper()
	id := randHex()
	env := map[string]string{
		"HTTP_ADDR":             "127.0.0.1:0",
		"DATABASE_URL":          pgtest.NewDatabase(t),
		"REDIS_PREFIX":          "test:" + id + ":",
		"NATS_PREFIX":           "t" + id,
		"AUTH_DEV_KEYGEN":       "true",
		"AUTH_SIGNING_KEY_FILE": t.TempDir() + "/key.pem",
		"LOG_LEVEL":             "warn",
		// These tests call no protected route, so the key set is never
		// fetched; the gateway end-to-end tests cover verification.
		"AUTH_JWKS_URL": "http://127.0.0.1:1/unused",
	}
	for k, v := range extra {
		env[k] = v
	}
	getenv := func(k string) string { return env[k] }
	ctx := context.Background()
	if err := run(ctx, []string{"auth", "bootstrap", "-customer", "Acme", "-email", "admin@acme.test", "-password", "correct horse battery"}, getenv, io.Discard); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(ctx)
	ta := &testAuth{env: env, cancel: cancel, done: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				addr <- a
			}
		}
	}()
	go func() { ta.done <- run(ctx, []string{"auth"}, getenv, pw) }()
	select {
	case a := <-addr:
		ta.base = "http://" + a
	case err := <-ta.done:
		t.Fatalf("auth exited: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("auth did not start")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-ta.done:
			if err != nil {
				t.Errorf("run returned %v on shutdown", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("auth did not shut down")
		}
	})
	return ta
}

func (ta *testAuth) post(t *testing.T, path, body string, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, ta.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func TestLoginThrottledPerClientIP(t *testing.T) {
	ta := startAuth(t, map[string]string{"AUTH_LOGIN_MAX_FAILURES_IP": "3", "AUTH_LOGIN_MAX_FAILURES": "100"})
	from := func(ip string) map[string]string { return map[string]string{"X-Forwarded-For": ip} }
	for i := 0; i < 3; i++ {
		st, _, b := ta.post(t, "/api/Auth/login", `{"email":"user`+string(rune('a'+i))+`@x.test","password":"wrongwrongwrong"}`, from("198.51.100.7"))
		if st != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d %s", i, st, b)
		}
	}
	st, h, b := ta.post(t, "/api/Auth/login", `{"email":"admin@acme.test","password":"correct horse battery"}`, from("198.51.100.7"))
	if st != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Fatalf("4th attempt from the same IP: %d %v %s", st, h, b)
	}
	st, _, b = ta.post(t, "/api/Auth/login", `{"email":"admin@acme.test","password":"correct horse battery"}`, from("198.51.100.8"))
	if st != http.StatusOK {
		t.Fatalf("another IP must not be throttled: %d %s", st, b)
	}
}

func TestPasswordResetPublishesEventAndVoidsTokens(t *testing.T) {
	ta := startAuth(t, nil)
	nc, err := nats.Connect("nats://127.0.0.1:4222")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	names := contracts.Names{Prefix: ta.env["NATS_PREFIX"]}
	msgs := make(chan *nats.Msg, 4)
	sub, err := nc.ChanSubscribe(names.Subject(contracts.EventSubject(contracts.EventPasswordResetRequested)), msgs)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	st, _, _ := ta.post(t, "/api/Auth/forgot-password", `{"email":"nobody@acme.test"}`, nil)
	if st != http.StatusAccepted {
		t.Fatalf("unknown address: %d", st)
	}
	st, _, _ = ta.post(t, "/api/Auth/forgot-password", `{"email":"ADMIN@acme.test"}`, nil)
	if st != http.StatusAccepted {
		t.Fatalf("known address: %d", st)
	}
	var ev contracts.Event[contracts.PasswordResetRequested]
	select {
	case m := <-msgs:
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no reset event")
	}
	if ev.Data.Email != "admin@acme.test" || ev.Data.Token == "" || ev.CustomerID == 0 {
		t.Fatalf("event: %+v", ev)
	}
	select {
	case m := <-msgs:
		t.Fatalf("an unknown address must not produce an event: %s", m.Data)
	default:
	}
	st, _, b := ta.post(t, "/api/Auth/reset-password", `{"token":"`+ev.Data.Token+`","newPassword":"short"}`, nil)
	if st != http.StatusBadRequest || !bytes.Contains(b, []byte("newPassword")) {
		t.Fatalf("weak password: %d %s", st, b)
	}
	st, _, b = ta.post(t, "/api/Auth/reset-password", `{"token":"`+ev.Data.Token+`","newPassword":"a brand new passphrase"}`, nil)
	if st != http.StatusNoContent {
		t.Fatalf("reset: %d %s", st, b)
	}
	st, _, _ = ta.post(t, "/api/Auth/reset-password", `{"token":"`+ev.Data.Token+`","newPassword":"yet another passphrase"}`, nil)
	if st != http.StatusBadRequest {
		t.Fatalf("a spent token must be refused: %d", st)
	}
	if st, _, _ = ta.post(t, "/api/Auth/login", `{"email":"admin@acme.test","password":"correct horse battery"}`, nil); st != http.StatusUnauthorized {
		t.Fatalf("old password still works: %d", st)
	}
	if st, _, _ = ta.post(t, "/api/Auth/login", `{"email":"admin@acme.test","password":"a brand new passphrase"}`, nil); st != http.StatusOK {
		t.Fatalf("new password refused: %d", st)
	}
}

func TestRunRejectsBadConfigAndCommands(t *testing.T) {
	env := map[string]string{"AUTH_TOKEN_TTL": "soon"}
	if err := run(context.Background(), []string{"auth"}, func(k string) string { return env[k] }, io.Discard); err == nil {
		t.Fatal("invalid duration accepted")
	}
	env = map[string]string{"AUTH_TOKEN_TTL": "72h"}
	if err := run(context.Background(), []string{"auth"}, func(k string) string { return env[k] }, io.Discard); err == nil {
		t.Fatal("token lifetime over 24h accepted")
	}
	if err := run(context.Background(), []string{"auth", "frobnicate"}, func(string) string { return "" }, io.Discard); err == nil {
		t.Fatal("unknown command accepted")
	}
}

func TestREADMEDocumentsEveryVariable(t *testing.T) {
	configtest.RequireDocumented(t, "../../../../README.md", Config{})
}

func TestEveryRouteIsDocumented(t *testing.T) {
	c, err := apicontract.Load("../../../../gateway/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpserver.New(httpserver.Options{Service: "auth", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	httpapi.New(nil, srv).Routes(srv.Engine, func(*gin.Context) {})
	served := httpserver.RouteKeys(srv.Engine)
	undocumented, unserved := c.CompareRoutes(served, "/api/Auth", "/api/Customers", "/api/Accounts", "/.well-known")
	if len(undocumented) > 0 || len(unserved) > 0 {
		t.Fatalf("served but not in gateway/openapi.yaml: %v; documented but not served: %v", undocumented, unserved)
	}
}
