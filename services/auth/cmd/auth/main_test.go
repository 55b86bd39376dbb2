package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"mime/quotedprintable"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/apicontract"
	"supportplatform.dev/pkg/config/configtest"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/servicetest"
	"supportplatform.dev/pkg/smtpfake"
	"supportplatform.dev/services/auth/internal/auth"
	"supportplatform.dev/services/auth/internal/httpapi"
)

const (
	adminEmail    = "admin@acme.test"
	adminPassword = "correct horse battery"
)

// startAuth runs auth with the servicetest harness. Auth verifies its own
// tokens (logout, /api/Customers/me), so its signing key is made here and
// the JWKS it is pointed at serves that key. Acme's admin is bootstrapped
// with run's bootstrap command on the same environment.
func startAuth(t *testing.T, env map[string]string) *servicetest.Service {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(auth.NewSigner(key, "", "", time.Hour).JWKS())
	}))
	t.Cleanup(jwks.Close)
	o := servicetest.Options{Env: map[string]string{"AUTH_SIGNING_KEY_FILE": keyFile, "AUTH_JWKS_URL": jwks.URL}}
	for k, v := range env {
		o.Env[k] = v
	}
	svc := servicetest.Start(t, "auth", run, o)
	args := []string{"auth", "bootstrap", "-customer", "Acme", "-email", adminEmail, "-password", adminPassword}
	if err := run(t.Context(), args, func(k string) string { return svc.Env[k] }, io.Discard); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	return svc
}

func post(t *testing.T, svc *servicetest.Service, path, body string, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	return call(t, svc, http.MethodPost, path, body, hdr)
}

func call(t *testing.T, svc *servicetest.Service, method, path, body string, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, svc.URL+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, nil, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func login(t *testing.T, svc *servicetest.Service, email, password string) string {
	t.Helper()
	st, _, b := post(t, svc, "/api/Auth/login", `{"email":"`+email+`","password":"`+password+`"}`, nil)
	var tok struct {
		AccessToken string `json:"accessToken"`
	}
	if st != http.StatusOK || json.Unmarshal(b, &tok) != nil || tok.AccessToken == "" {
		t.Fatalf("login %s: %d %s", email, st, b)
	}
	return tok.AccessToken
}

// TestLoginThrottledPerClientIP fires parallel wrong logins from one address:
// the limit's worth get 401, the rest 429, and the IP stays throttled even
// for the right password while another IP is not.
func TestLoginThrottledPerClientIP(t *testing.T) {
	svc := startAuth(t, map[string]string{"AUTH_LOGIN_MAX_FAILURES_IP": "3", "AUTH_LOGIN_MAX_FAILURES": "100"})
	from := func(ip string) map[string]string { return map[string]string{"X-Forwarded-For": ip} }
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, h, b := post(t, svc, "/api/Auth/login", `{"email":"user`+strconv.Itoa(i)+`@x.test","password":"wrongwrongwrong"}`, from("198.51.100.7"))
			if st == http.StatusTooManyRequests && h.Get("Retry-After") == "" {
				t.Errorf("429 without Retry-After: %s", b)
			}
			mu.Lock()
			statuses[st]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if statuses[http.StatusUnauthorized] != 3 || statuses[http.StatusTooManyRequests] != 9 {
		t.Fatalf("statuses %v, want 3 x 401 and 9 x 429", statuses)
	}
	st, h, b := post(t, svc, "/api/Auth/login", `{"email":"`+adminEmail+`","password":"`+adminPassword+`"}`, from("198.51.100.7"))
	if st != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Fatalf("the right password from the throttled IP: %d %v %s", st, h, b)
	}
	st, _, b = post(t, svc, "/api/Auth/login", `{"email":"`+adminEmail+`","password":"`+adminPassword+`"}`, from("198.51.100.8"))
	if st != http.StatusOK {
		t.Fatalf("another IP must not be throttled: %d %s", st, b)
	}
}

// lastEvent waits for the last event on the EVENTS stream with eventType.
func lastEvent[T any](t *testing.T, natsURL, prefix, eventType string, within time.Duration) contracts.Event[T] {
	t.Helper()
	ev, _ := lastEventRaw[T](t, natsURL, prefix, eventType, within)
	return ev
}

// lastEventRaw is lastEvent with the message's bytes.
func lastEventRaw[T any](t *testing.T, natsURL, prefix, eventType string, within time.Duration) (contracts.Event[T], []byte) {
	t.Helper()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	names := contracts.Names{Prefix: prefix}
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		var m *jetstream.RawStreamMsg
		st, err := js.Stream(ctx, names.Stream(contracts.StreamEvents))
		if err == nil {
			m, err = st.GetLastMsgForSubject(ctx, names.Subject(contracts.EventSubject(eventType)))
		}
		cancel()
		if err == nil {
			var ev contracts.Event[T]
			if err := json.Unmarshal(m.Data, &ev); err != nil {
				t.Fatal(err)
			}
			return ev, m.Data
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event within %v: %v", eventType, within, err)
		}
		time.Sleep(50 * time.Millisecond) // polling the stream, not waiting out a clock
	}
}

// streamCount is how many messages the EVENTS stream holds.
func streamCount(t *testing.T, natsURL, prefix string) uint64 {
	t.Helper()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(t.Context(), contracts.Names{Prefix: prefix}.Stream(contracts.StreamEvents))
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func checkResetEvent(t *testing.T, ev contracts.Event[contracts.PasswordResetRequested], raw []byte) {
	t.Helper()
	if ev.Type != contracts.EventPasswordResetRequested || ev.ID == "" || ev.CustomerID == 0 || ev.Data.AccountID == 0 ||
		ev.Data.Email != adminEmail || ev.Data.Name != "Administrator" ||
		time.Until(ev.Data.ExpiresAt) < 25*time.Minute || time.Until(ev.Data.ExpiresAt) > 31*time.Minute {
		t.Fatalf("the event lacks what it records: %+v", ev)
	}
	if strings.Contains(string(raw), "token") {
		t.Fatalf("the event carries a token: %s", raw)
	}
}

// startRelay runs an SMTP relay in-process that requires STARTTLS and AUTH,
// and returns it with the SMTP_* environment that points auth at it.
func startRelay(t *testing.T) (*smtpfake.Server, map[string]string) {
	t.Helper()
	tlsCfg, caPEM, err := smtpfake.SelfSigned(time.Now(), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "relay-ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	relay, err := smtpfake.Start("127.0.0.1:0", smtpfake.Options{TLS: tlsCfg, Username: "auth", Password: "relay-secret"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = relay.Close() })
	return relay, map[string]string{"SMTP_ADDR": relay.Addr, "SMTP_USERNAME": "auth", "SMTP_PASSWORD": "relay-secret",
		"SMTP_FROM": "Support <no-reply@support.example>", "SMTP_TLS_CA_FILE": caFile,
		"AUTH_RESET_URL": "https://support.example/reset-password"}
}

// mailedToken waits for the n-th mail at the relay and returns the token of
// the reset link in it.
func mailedToken(t *testing.T, relay *smtpfake.Server, n int) (string, []smtpfake.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	msgs, err := relay.Wait(ctx, func(m []smtpfake.Message) bool { return len(m) >= n })
	if err != nil {
		t.Fatalf("%d mails at the relay, want %d: %v", len(msgs), n, err)
	}
	pm, err := msgs[n-1].Parse()
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(quotedprintable.NewReader(pm.Body))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(body), "https://support.example/reset-password#token=")
	if !ok {
		return "", msgs
	}
	token, _, _ := strings.Cut(rest, "\r\n")
	return token, msgs
}

// TestPasswordResetMailsTheLinkAndVoidsTokens: the reset link reaches the
// owner by mail through the relay (over STARTTLS), the event on the stream
// carries no token, the token sets a new password once, a token issued
// before the reset is refused from then on, and the owner is told by mail.
func TestPasswordResetMailsTheLinkAndVoidsTokens(t *testing.T) {
	relay, env := startRelay(t)
	svc := startAuth(t, env)
	before := login(t, svc, adminEmail, adminPassword)
	bearer := map[string]string{"Authorization": "Bearer " + before}
	if st, _, b := call(t, svc, http.MethodGet, "/api/Customers/me", "", bearer); st != http.StatusOK {
		t.Fatalf("me before the reset: %d %s", st, b)
	}

	for _, addr := range []string{"nobody@acme.test", "ADMIN@acme.test"} {
		if st, _, b := post(t, svc, "/api/Auth/forgot-password", `{"email":"`+addr+`"}`, nil); st != http.StatusAccepted {
			t.Fatalf("forgot %s: %d %s", addr, st, b)
		}
	}
	token, msgs := mailedToken(t, relay, 1)
	if len(token) != 43 || len(msgs[0].To) != 1 || msgs[0].To[0] != adminEmail {
		t.Fatalf("reset mail to %v with token %q", msgs[0].To, token)
	}
	ev, raw := lastEventRaw[contracts.PasswordResetRequested](t, svc.Env["NATS_URL"], svc.Env["NATS_PREFIX"], contracts.EventPasswordResetRequested, 10*time.Second)
	checkResetEvent(t, ev, raw)
	if strings.Contains(string(raw), token) {
		t.Fatalf("the event carries the token: %s", raw)
	}
	if n := streamCount(t, svc.Env["NATS_URL"], svc.Env["NATS_PREFIX"]); n != 1 {
		t.Fatalf("%d events on the stream, want 1 (an unknown address must not produce one)", n)
	}

	st, _, b := post(t, svc, "/api/Auth/reset-password", `{"token":"`+token+`","newPassword":"short"}`, nil)
	if st != http.StatusBadRequest || !strings.Contains(string(b), `"newPassword"`) {
		t.Fatalf("weak password: %d %s", st, b)
	}
	if st, _, b = post(t, svc, "/api/Auth/reset-password", `{"token":"`+token+`","newPassword":"a brand new passphrase"}`, nil); st != http.StatusNoContent {
		t.Fatalf("reset: %d %s", st, b)
	}
	if st, _, b = call(t, svc, http.MethodGet, "/api/Customers/me", "", bearer); st != http.StatusUnauthorized {
		t.Fatalf("a token issued before the reset must be refused: %d %s", st, b)
	}
	if st, _, b = post(t, svc, "/api/Auth/reset-password", `{"token":"`+token+`","newPassword":"yet another passphrase"}`, nil); st != http.StatusBadRequest || !strings.Contains(string(b), `"token"`) {
		t.Fatalf("a spent token must be refused: %d %s", st, b)
	}
	if st, _, _ = post(t, svc, "/api/Auth/login", `{"email":"`+adminEmail+`","password":"`+adminPassword+`"}`, nil); st != http.StatusUnauthorized {
		t.Fatalf("old password still works: %d", st)
	}
	after := login(t, svc, adminEmail, "a brand new passphrase")
	if st, _, b = call(t, svc, http.MethodGet, "/api/Customers/me", "", map[string]string{"Authorization": "Bearer " + after}); st != http.StatusOK {
		t.Fatalf("a token issued after the reset: %d %s", st, b)
	}
	changed := lastEvent[contracts.PasswordChanged](t, svc.Env["NATS_URL"], svc.Env["NATS_PREFIX"], contracts.EventPasswordChanged, 10*time.Second)
	if changed.Data.AccountID != ev.Data.AccountID || changed.CustomerID != ev.CustomerID {
		t.Fatalf("password-changed event %+v", changed)
	}
	if notice, msgs := mailedToken(t, relay, 2); notice != "" || len(msgs) != 2 || !strings.Contains(string(msgs[1].Data), "Subject: Your password was changed") {
		t.Fatalf("second mail (the notice) %q, token %q", msgs[len(msgs)-1].Data, notice)
	}
}

// TestForgotPasswordWhileNATSIsDown: with NATS unreachable, a known and an
// unknown address both get 202, and the known one's event is published
// once NATS is back.
func TestForgotPasswordWhileNATSIsDown(t *testing.T) {
	ns := natstest.StartServer(t, nil)
	natsURL := ns.URL()
	svc := startAuth(t, map[string]string{"NATS_URL": natsURL})
	ns.Stop()

	for _, addr := range []string{"nobody@acme.test", adminEmail} {
		if st, _, b := post(t, svc, "/api/Auth/forgot-password", `{"email":"`+addr+`"}`, nil); st != http.StatusAccepted {
			t.Fatalf("forgot %s with NATS down: %d %s", addr, st, b)
		}
	}
	if st, _, _ := call(t, svc, http.MethodGet, "/readyz", "", nil); st == http.StatusOK {
		t.Fatal("NATS is not down: the test would prove nothing")
	}

	ns.Start()
	ev, raw := lastEventRaw[contracts.PasswordResetRequested](t, natsURL, svc.Env["NATS_PREFIX"], contracts.EventPasswordResetRequested, 20*time.Second)
	checkResetEvent(t, ev, raw)
	conn, err := pgx.Connect(t.Context(), svc.Env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for {
		var queued int
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM auth.outbox`).Scan(&queued); err != nil {
			t.Fatal(err)
		}
		if queued == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events still queued", queued)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := streamCount(t, natsURL, svc.Env["NATS_PREFIX"]); n != 1 {
		t.Fatalf("%d events on the stream, want 1", n)
	}
}

func TestRunRejectsBadConfigAndCommands(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"invalid duration":        {"AUTH_TOKEN_TTL": "soon"},
		"token lifetime over 24h": {"AUTH_TOKEN_TTL": "72h"},
		"zero login limit":        {"AUTH_LOGIN_MAX_FAILURES": "0"},
		"zero create limit":       {"AUTH_ACCOUNT_CREATE_LIMIT": "0"},
		"negative window":         {"AUTH_ACCOUNT_CREATE_WINDOW": "-1h"},
		"relay without reset URL": {"SMTP_ADDR": "127.0.0.1:587"},
		"relative reset URL":      {"SMTP_ADDR": "127.0.0.1:587", "AUTH_RESET_URL": "/reset"},
		"reset URL with fragment": {"SMTP_ADDR": "127.0.0.1:587", "AUTH_RESET_URL": "https://x.example/r#a"},
		"missing relay CA file":   {"SMTP_ADDR": "127.0.0.1:587", "AUTH_RESET_URL": "https://x.example/r", "SMTP_TLS_CA_FILE": "/nonexistent.pem"},
		"relay user without pass": {"SMTP_ADDR": "127.0.0.1:587", "AUTH_RESET_URL": "https://x.example/r", "SMTP_USERNAME": "u"},
	} {
		t.Run(name, func(t *testing.T) {
			if err := run(context.Background(), []string{"auth"}, func(k string) string { return env[k] }, io.Discard); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if err := run(context.Background(), []string{"auth", "frobnicate"}, func(string) string { return "" }, io.Discard); err == nil {
		t.Fatal("unknown command accepted")
	}
}

func TestREADMEDocumentsEveryVariable(t *testing.T) {
	configtest.RequireDocumented(t, "../../README.md", Config{})
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

// An admin deletes an agent: the agent's token is refused at once, its
// login fails, it is listed and found no more, and its address stays
// taken. Refused: an agent deleting, an admin deleting itself (409),
// another customer's account, an unknown or already deleted one (404).
func TestDeleteAccount(t *testing.T) {
	svc := startAuth(t, nil)
	admin := map[string]string{"Authorization": "Bearer " + login(t, svc, adminEmail, adminPassword)}
	var me struct {
		Account struct {
			AccountID int64 `json:"accountID"`
		} `json:"account"`
	}
	_, _, b := call(t, svc, http.MethodGet, "/api/Customers/me", "", admin)
	if err := json.Unmarshal(b, &me); err != nil || me.Account.AccountID == 0 {
		t.Fatalf("me: %s", b)
	}
	create := func(email string) int64 {
		t.Helper()
		st, _, b := post(t, svc, "/api/Accounts", `{"email":"`+email+`","name":"Agent","role":"agent","password":"agent password 1"}`, admin)
		var a struct {
			AccountID int64 `json:"accountID"`
		}
		if st != http.StatusCreated || json.Unmarshal(b, &a) != nil {
			t.Fatalf("create %s: %d %s", email, st, b)
		}
		return a.AccountID
	}
	agentID := create("agent@acme.test")
	agent := map[string]string{"Authorization": "Bearer " + login(t, svc, "agent@acme.test", "agent password 1")}
	path := func(id int64) string { return fmt.Sprintf("/api/Accounts/%d", id) }

	// The other customer's admin.
	args := []string{"auth", "bootstrap", "-customer", "Globex", "-email", "admin@globex.test", "-password", adminPassword}
	if err := run(t.Context(), args, func(k string) string { return svc.Env[k] }, io.Discard); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	globex := map[string]string{"Authorization": "Bearer " + login(t, svc, "admin@globex.test", adminPassword)}

	refusals := []struct {
		name   string
		hdr    map[string]string
		path   string
		status int
	}{
		{"an agent deletes", agent, path(me.Account.AccountID), http.StatusForbidden},
		{"an admin deletes itself", admin, path(me.Account.AccountID), http.StatusConflict},
		{"another customer's account", globex, path(agentID), http.StatusNotFound},
		{"an unknown account", admin, path(agentID + 1000), http.StatusNotFound},
		{"a malformed id", admin, "/api/Accounts/01", http.StatusBadRequest},
		{"me is no id", admin, "/api/Accounts/me", http.StatusBadRequest},
		{"no token", nil, path(agentID), http.StatusUnauthorized},
	}
	for _, tc := range refusals {
		if st, hdr, b := call(t, svc, http.MethodDelete, tc.path, "", tc.hdr); st != tc.status || hdr.Get("Content-Type") != httpserver.ProblemContentType {
			t.Errorf("%s: %d %s %s, want %d problem", tc.name, st, hdr.Get("Content-Type"), b, tc.status)
		}
	}
	// Nothing was changed by the refusals.
	if st, _, b := call(t, svc, http.MethodGet, "/api/Customers/me", "", agent); st != http.StatusOK {
		t.Fatalf("the agent after the refusals: %d %s", st, b)
	}

	if st, _, b := call(t, svc, http.MethodDelete, path(agentID), "", admin); st != http.StatusNoContent {
		t.Fatalf("delete: %d %s", st, b)
	}
	if st, _, b := call(t, svc, http.MethodGet, "/api/Customers/me", "", agent); st != http.StatusUnauthorized {
		t.Errorf("the deleted account's token: %d %s", st, b)
	}
	if st, _, b := post(t, svc, "/api/Auth/login", `{"email":"agent@acme.test","password":"agent password 1"}`, nil); st != http.StatusUnauthorized {
		t.Errorf("the deleted account's login: %d %s", st, b)
	}
	if st, _, b := call(t, svc, http.MethodGet, path(agentID), "", admin); st != http.StatusNotFound {
		t.Errorf("get the deleted account: %d %s", st, b)
	}
	if st, _, b := call(t, svc, http.MethodDelete, path(agentID), "", admin); st != http.StatusNotFound {
		t.Errorf("delete it again: %d %s", st, b)
	}
	_, _, b = call(t, svc, http.MethodGet, "/api/Accounts?pageSize=100", "", admin)
	var list struct {
		Items []struct {
			AccountID int64 `json:"accountID"`
		} `json:"items"`
		TotalCount int `json:"totalCount"`
	}
	if err := json.Unmarshal(b, &list); err != nil || list.TotalCount != 1 || len(list.Items) != 1 || list.Items[0].AccountID != me.Account.AccountID {
		t.Errorf("accounts after the delete: %s", b)
	}
	if st, _, b := post(t, svc, "/api/Accounts", `{"email":"agent@acme.test","name":"Agent","role":"agent","password":"agent password 1"}`, admin); st != http.StatusConflict {
		t.Errorf("the deleted account's address again: %d %s", st, b)
	}
	// The admin's own token is untouched.
	if st, _, b := call(t, svc, http.MethodGet, "/api/Customers/me", "", admin); st != http.StatusOK {
		t.Errorf("the admin after the delete: %d %s", st, b)
	}
}
