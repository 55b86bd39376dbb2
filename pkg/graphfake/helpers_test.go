package graphfake

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"supportplatform.dev/pkg/clocktest"
)

const (
	testClientID     = "5b1e9a3c-0d7e-4d7b-9a0e-3f2a1c6b8e01"
	testClientSecret = "s3cr3t~value"
	tenantA          = "6f1c2d3e-aaaa-4bbb-8ccc-000000000001"
	tenantB          = "6f1c2d3e-aaaa-4bbb-8ccc-000000000002"
)

func newClock() *clocktest.Clock {
	return clocktest.New(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
}

// receiver is a webhook endpoint over TLS, as the gateway's is. Its answer to the validation
// handshake is chosen per test.
type receiver struct {
	srv *httptest.Server

	mu            sync.Mutex
	handler       http.Handler                              // replaces everything below when set
	reply         func(w http.ResponseWriter, token string) // nil: the correct echo
	status        int                                       // notifications' answer; 0: 202
	handshakes    []handshake
	notifications []notificationBody
}

type handshake struct {
	path, rawQuery, token, contentType string
	bodyLen                            int
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.srv = httptest.NewTLSServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	rc.mu.Lock()
	h := rc.handler
	rc.mu.Unlock()
	if h != nil {
		h.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	if token := r.URL.Query().Get("validationToken"); token != "" {
		rc.mu.Lock()
		rc.handshakes = append(rc.handshakes, handshake{path: r.URL.Path, rawQuery: r.URL.RawQuery, token: token,
			contentType: r.Header.Get("Content-Type"), bodyLen: len(body)})
		reply := rc.reply
		rc.mu.Unlock()
		if reply != nil {
			reply(w, token)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, token)
		return
	}
	var n notificationBody
	_ = json.Unmarshal(body, &n)
	rc.mu.Lock()
	rc.notifications = append(rc.notifications, n)
	status := rc.status
	rc.mu.Unlock()
	if status == 0 {
		status = http.StatusAccepted
	}
	w.WriteHeader(status)
}

func (rc *receiver) setReply(f func(w http.ResponseWriter, token string)) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.reply = f
}

func (rc *receiver) setStatus(status int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.status = status
}

func (rc *receiver) setHandler(h http.Handler) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.handler = h
}

// echoOr answers the validation handshake correctly and passes everything else to h.
func echoOr(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok := r.URL.Query().Get("validationToken"); tok != "" {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, tok)
			return
		}
		h(w, r)
	})
}

func (rc *receiver) gotHandshakes() []handshake {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]handshake(nil), rc.handshakes...)
}

func (rc *receiver) gotNotifications() []notificationBody {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]notificationBody(nil), rc.notifications...)
}

func (rc *receiver) url(path string) string { return rc.srv.URL + path }

type env struct {
	t     *testing.T
	fake  *Server
	srv   *httptest.Server
	clock *clocktest.Clock
	recv  *receiver
}

func newEnv(t *testing.T, adjust ...func(*Options)) *env {
	t.Helper()
	e := &env{t: t, clock: newClock(), recv: newReceiver(t)}
	o := Options{ClientID: testClientID, ClientSecret: testClientSecret, Now: e.clock.Now, HTTPClient: e.recv.srv.Client()}
	for _, f := range adjust {
		f(&o)
	}
	e.fake = New(o)
	e.srv = httptest.NewServer(e.fake)
	t.Cleanup(e.srv.Close)
	return e
}

// tokenRequest posts a token request and returns the status and decoded body.
func (e *env) tokenRequest(tenant string, form url.Values) (int, map[string]any) {
	e.t.Helper()
	resp, err := http.PostForm(e.srv.URL+"/"+tenant+"/oauth2/v2.0/token", form)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		e.t.Fatalf("token reply: %v", err)
	}
	return resp.StatusCode, out
}

func goodForm() url.Values {
	return url.Values{
		"client_id":     {testClientID},
		"client_secret": {testClientSecret},
		"scope":         {GraphScope},
		"grant_type":    {"client_credentials"},
	}
}

func (e *env) token(tenant string) string {
	e.t.Helper()
	status, out := e.tokenRequest(tenant, goodForm())
	if status != http.StatusOK {
		e.t.Fatalf("token for %s: %d %v", tenant, status, out)
	}
	return out["access_token"].(string)
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) errorCode() string {
	var ge graphError
	_ = json.Unmarshal(r.body, &ge)
	return ge.Error.Code
}

func (r reply) subscription(t *testing.T) subscriptionJSON {
	t.Helper()
	var s subscriptionJSON
	if err := json.Unmarshal(r.body, &s); err != nil {
		t.Fatalf("subscription reply %s: %v", r.body, err)
	}
	return s
}

// call makes a Graph call with token tok ("" for none); path is under /v1.0 or absolute.
func (e *env) call(method, path, tok string, body any) reply {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	u := path
	if !strings.HasPrefix(path, "http") {
		u = e.srv.URL + "/v1.0" + path
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: raw}
}

// newSub is a valid create body for folder in mailbox, to be adjusted by the test.
func (e *env) newSub(mailbox, folder string) map[string]any {
	return map[string]any{
		"changeType":         "created",
		"notificationUrl":    e.recv.url("/api/ProviderWebhook"),
		"resource":           "/users/" + mailbox + "/mailFolders('" + folder + "')/messages",
		"expirationDateTime": formatTime(e.clock.Now().Add(70 * time.Hour)), // under 4230 minutes
		"clientState":        "state-" + folder,
	}
}

// create makes a subscription and fails the test unless Graph answers 201.
func (e *env) create(tok string, body map[string]any) subscriptionJSON {
	e.t.Helper()
	r := e.call(http.MethodPost, "/subscriptions", tok, body)
	if r.status != http.StatusCreated {
		e.t.Fatalf("create: %d %s", r.status, r.body)
	}
	return r.subscription(e.t)
}
