package graph_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"supportplatform.dev/pkg/clocktest"
	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/services/mail/internal/graph"
)

const (
	clientID     = "5b1e9a3c-0d7e-4d7b-9a0e-3f2a1c6b8e01"
	clientSecret = "s3cr3t~value+/="
	tenantA      = "6f1c2d3e-aaaa-4bbb-8ccc-000000000001"
	tenantB      = "6f1c2d3e-aaaa-4bbb-8ccc-000000000002"
)

// recorded is a Graph request as the fake received it.
type recorded struct {
	method, path, prefer string
	query                string // raw
	body                 []byte
	at                   time.Time // wall clock, when the fake received it
}

// fixture runs the real client against graphfake, with a webhook receiver over TLS that answers
// the validation handshake as the mail service must.
type fixture struct {
	t      *testing.T
	clock  *clocktest.Clock
	fake   *graphfake.Server
	srv    *httptest.Server
	recv   *httptest.Server
	client *graph.Client

	mu   sync.Mutex
	reqs []recorded
}

func newFixture(t *testing.T, adjust ...func(*graphfake.Options)) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: clocktest.New(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))}
	f.recv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok := r.URL.Query().Get("validationToken"); tok != "" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, tok)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(f.recv.Close)

	o := graphfake.Options{ClientID: clientID, ClientSecret: clientSecret, Now: f.clock.Now, HTTPClient: f.recv.Client()}
	for _, a := range adjust {
		a(&o)
	}
	f.fake = graphfake.New(o)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1.0/") {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			f.mu.Lock()
			f.reqs = append(f.reqs, recorded{method: r.Method, path: r.URL.Path, prefer: r.Header.Get("Prefer"),
				query: r.URL.RawQuery, body: body, at: time.Now()})
			f.mu.Unlock()
		}
		f.fake.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	f.client = f.newClient(clientSecret)
	return f
}

func (f *fixture) newClient(secret string, adjust ...func(*graph.Config)) *graph.Client {
	f.t.Helper()
	cfg := graph.Config{
		ClientID:     clientID,
		ClientSecret: secret,
		TokenURL:     f.srv.URL + "/{tenant}/oauth2/v2.0/token",
		BaseURL:      f.srv.URL + "/v1.0",
		HTTPClient:   f.srv.Client(),
		Now:          f.clock.Now,
	}
	for _, a := range adjust {
		a(&cfg)
	}
	c, err := graph.New(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fixture) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func (f *fixture) newSub(folder string) graph.NewSubscription {
	return graph.NewSubscription{
		Mailbox:         "agent@contoso.example",
		FolderID:        folder,
		NotificationURL: f.recv.URL + "/api/providerwebhook",
		ClientState:     "cs-" + folder,
		Expiration:      f.clock.Now().Add(70 * time.Hour),
	}
}

func (f *fixture) create(tenant, folder string) graph.Subscription {
	f.t.Helper()
	s, err := f.client.CreateSubscription(f.t.Context(), tenant, f.newSub(folder))
	if err != nil {
		f.t.Fatalf("create %s: %v", folder, err)
	}
	return s
}
