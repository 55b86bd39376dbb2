package graph_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/services/mail/internal/graph"
)

func TestTokenIsCachedUntilNearExpiry(t *testing.T) {
	f := newFixture(t)
	list := func() {
		t.Helper()
		if _, err := f.client.ListSubscriptions(t.Context(), tenantA); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name       string
		advance    time.Duration
		calls      int
		wantTokens int
	}{
		{name: "first calls share one token", calls: 5, wantTokens: 1},
		{name: "still valid 55 minutes on", advance: 55 * time.Minute, calls: 3, wantTokens: 1},
		// 3599 s lifetime: within two minutes of expiry the client asks for a new one.
		{name: "replaced near expiry", advance: 3 * time.Minute, calls: 3, wantTokens: 2},
		{name: "the new one is cached too", advance: time.Minute, calls: 3, wantTokens: 2},
		{name: "replaced again after it expired", advance: 2 * time.Hour, calls: 1, wantTokens: 3},
	}
	for _, s := range steps {
		f.clock.Advance(s.advance)
		for range s.calls {
			list()
		}
		if got := f.fake.TokenRequests(tenantA); got != s.wantTokens {
			t.Fatalf("%s: %d token requests, want %d", s.name, got, s.wantTokens)
		}
	}
}

func TestConcurrentCallsShareOneTokenRequest(t *testing.T) {
	f := newFixture(t)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if _, err := f.client.ListSubscriptions(t.Context(), tenantA); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := f.fake.TokenRequests(tenantA); got != 1 {
		t.Errorf("%d token requests, want 1", got)
	}
}

func TestTokensPerTenant(t *testing.T) {
	f := newFixture(t)
	a := f.create(tenantA, "inbox")
	b := f.create(tenantB, "inbox") // same folder name, other customer: no conflict
	for range 3 {
		for _, tenant := range []string{tenantA, tenantB} {
			if _, err := f.client.ListSubscriptions(t.Context(), tenant); err != nil {
				t.Fatal(err)
			}
		}
	}
	if f.fake.TokenRequests(tenantA) != 1 || f.fake.TokenRequests(tenantB) != 1 {
		t.Errorf("token requests A %d, B %d; want 1 each", f.fake.TokenRequests(tenantA), f.fake.TokenRequests(tenantB))
	}
	if _, err := f.client.GetSubscription(t.Context(), tenantB, a.ID); !graph.IsNotFound(err) {
		t.Errorf("tenant B reading tenant A's subscription: %v", err)
	}
	for _, fs := range f.fake.Subscriptions() {
		if (fs.ID == a.ID) != (fs.TenantID == tenantA) || (fs.ID == b.ID) != (fs.TenantID == tenantB) {
			t.Errorf("subscription %s made in tenant %s", fs.ID, fs.TenantID)
		}
	}
}

func TestTokenErrors(t *testing.T) {
	tests := []struct {
		name       string
		adjust     func(*graphfake.Options)
		secret     string
		tenant     string
		tokenURL   string
		wantStatus int
		wantCode   string
	}{
		{name: "wrong secret", secret: "wrong+secret/=", tenant: tenantA, wantStatus: 401, wantCode: "invalid_client"},
		{name: "unknown tenant", adjust: func(o *graphfake.Options) { o.Tenants = []string{tenantA} }, tenant: tenantB,
			wantStatus: 400, wantCode: "invalid_request"},
		{name: "token endpoint out of reach", tenant: tenantA, tokenURL: "http://127.0.0.1:1/{tenant}/oauth2/v2.0/token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var adjust []func(*graphfake.Options)
			if tt.adjust != nil {
				adjust = append(adjust, tt.adjust)
			}
			f := newFixture(t, adjust...)
			secret := tt.secret
			if secret == "" {
				secret = clientSecret
			}
			cfg := graph.Config{ClientID: clientID, ClientSecret: secret, TokenURL: f.srv.URL + "/{tenant}/oauth2/v2.0/token",
				BaseURL: f.srv.URL + "/v1.0", Now: f.clock.Now}
			if tt.tokenURL != "" {
				cfg.TokenURL = tt.tokenURL
			}
			c, err := graph.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.ListSubscriptions(t.Context(), tt.tenant)
			var te *graph.TokenError
			if !errors.As(err, &te) {
				t.Fatalf("err %v (%T), want *graph.TokenError", err, err)
			}
			if te.TenantID != tt.tenant || te.Status != tt.wantStatus || te.Code != tt.wantCode {
				t.Errorf("TokenError %+v, want tenant %s status %d code %q", te, tt.tenant, tt.wantStatus, tt.wantCode)
			}
			if tt.wantStatus == 0 && te.Err == nil {
				t.Error("a transport failure without its cause")
			}
			for _, form := range []string{secret, url.QueryEscape(secret)} {
				if strings.Contains(err.Error(), form) {
					t.Errorf("error text %q contains the secret", err)
				}
			}
			if graph.IsThrottled(err) || graph.IsNotFound(err) {
				t.Errorf("a refused token classified as throttled or not found: %v", err)
			}
			if n := f.fake.Calls(http.MethodGet); n != 0 {
				t.Errorf("%d Graph calls without a token", n)
			}
		})
	}
}

func TestTokenEndpointThrottled(t *testing.T) {
	c := stubToken(t, func(w http.ResponseWriter) {
		w.Header().Set("Retry-After", "7")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"error":"temporarily_unavailable","error_description":"AADSTS50196: slow down"}`))
	})
	_, err := c.ListSubscriptions(t.Context(), tenantA)
	if !graph.IsThrottled(err) {
		t.Fatalf("err %v, want throttled", err)
	}
	if d, ok := graph.RetryAfter(err); !ok || d != 7*time.Second {
		t.Errorf("RetryAfter = %v, %v", d, ok)
	}
}

func TestTokenErrorNeverEchoesTheSecret(t *testing.T) {
	// A proxy that answers with the request it got would otherwise put the secret in logs.
	c := stubToken(t, func(w http.ResponseWriter) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("upstream refused: client_id=id&client_secret=" + url.QueryEscape("top secret+/") + "&scope=..."))
	}, "top secret+/")
	_, err := c.ListSubscriptions(t.Context(), tenantA)
	if err == nil || strings.Contains(err.Error(), "top secret") || strings.Contains(err.Error(), url.QueryEscape("top secret+/")) {
		t.Errorf("err %v", err)
	}
	if !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("err %v does not show where the secret was", err)
	}
}

// stubToken returns a client whose token endpoint always answers with reply.
func stubToken(t *testing.T, reply func(w http.ResponseWriter), secret ...string) *graph.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { reply(w) }))
	t.Cleanup(srv.Close)
	s := "secret"
	if len(secret) > 0 {
		s = secret[0]
	}
	c, err := graph.New(graph.Config{ClientID: "id", ClientSecret: s, TokenURL: srv.URL + "/{tenant}/token", BaseURL: srv.URL + "/v1.0"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGraphRefusingTheTokenDropsIt(t *testing.T) {
	f := newFixture(t)
	if _, err := f.client.ListSubscriptions(t.Context(), tenantA); err != nil {
		t.Fatal(err)
	}
	f.fake.FailNext(1, http.StatusUnauthorized)
	if _, err := f.client.ListSubscriptions(t.Context(), tenantA); err == nil {
		t.Fatal("the injected 401 did not surface")
	}
	if _, err := f.client.ListSubscriptions(t.Context(), tenantA); err != nil {
		t.Fatal(err)
	}
	if got := f.fake.TokenRequests(tenantA); got != 2 {
		t.Errorf("%d token requests, want a new token after the 401 (2)", got)
	}
}
