package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/pkg/httpretry"
	"supportplatform.dev/services/mail/internal/graph"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		cfg     graph.Config
		wantErr string
	}{
		{name: "defaults", cfg: graph.Config{ClientID: "id", ClientSecret: "secret"}},
		{name: "no client id", cfg: graph.Config{ClientSecret: "secret"}, wantErr: "client id"},
		{name: "blank secret", cfg: graph.Config{ClientID: "id", ClientSecret: "  "}, wantErr: "client secret"},
		{name: "token URL without tenant", cfg: graph.Config{ClientID: "id", ClientSecret: "secret",
			TokenURL: "https://login.microsoftonline.com/common/oauth2/v2.0/token"}, wantErr: "{tenant}"},
		{name: "relative token URL", cfg: graph.Config{ClientID: "id", ClientSecret: "secret", TokenURL: "/{tenant}/token"}, wantErr: "token URL"},
		{name: "base URL of another scheme", cfg: graph.Config{ClientID: "id", ClientSecret: "secret", BaseURL: "ftp://graph.example"}, wantErr: "base URL"},
		{name: "unparsable base URL", cfg: graph.Config{ClientID: "id", ClientSecret: "secret", BaseURL: "https://%zz"}, wantErr: "base URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := graph.New(tt.cfg)
			if tt.wantErr == "" {
				if err != nil || c == nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New: %v, want an error about %q", err, tt.wantErr)
			}
		})
	}
}

func TestResource(t *testing.T) {
	tests := []struct {
		name, mailbox, folder, want string
	}{
		{name: "plain", mailbox: "agent@contoso.example", folder: "AAMkAGI2-_=",
			want: "/users/agent@contoso.example/mailFolders('AAMkAGI2-_=')/messages"},
		{name: "quote in the folder id", mailbox: "a@b.example", folder: "it's", want: "/users/a@b.example/mailFolders('it''s')/messages"},
		{name: "mailbox needing escapes", mailbox: "o'brien/x y@b.example", folder: "inbox",
			want: "/users/o%27brien%2Fx%20y@b.example/mailFolders('inbox')/messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := graph.Resource(tt.mailbox, tt.folder); got != tt.want {
				t.Errorf("Resource(%q, %q) = %q, want %q", tt.mailbox, tt.folder, got, tt.want)
			}
		})
	}
}

func TestSubscriptionLifecycle(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	ns := f.newSub("AAMk'inbox")
	ns.LifecycleNotificationURL = f.recv.URL + "/api/providerwebhook/lifecycle"
	ns.Expiration = f.clock.Now().Add(70 * time.Hour).Add(123456789 * time.Nanosecond)

	created, err := f.client.CreateSubscription(ctx, tenantA, ns)
	if err != nil {
		t.Fatal(err)
	}
	wantExp := time.Date(2026, 11, 26, 8, 0, 0, 123456700, time.UTC) // Graph keeps 100 ns
	if created.ID == "" || created.ChangeType != "created" || created.Resource != graph.Resource(ns.Mailbox, ns.FolderID) ||
		created.NotificationURL != ns.NotificationURL || created.LifecycleNotificationURL != ns.LifecycleNotificationURL ||
		created.ClientState != ns.ClientState || !created.ExpirationDateTime.Equal(wantExp) {
		t.Errorf("created %+v", created)
	}
	post := f.requests()[0]
	var sent map[string]any
	if err := json.Unmarshal(post.body, &sent); err != nil {
		t.Fatal(err)
	}
	if post.method != http.MethodPost || post.path != "/v1.0/subscriptions" || post.prefer != `IdType="ImmutableId"` ||
		sent["changeType"] != "created" || sent["expirationDateTime"] != "2026-11-26T08:00:00.1234567Z" {
		t.Errorf("create request %s %s Prefer %q body %s", post.method, post.path, post.prefer, post.body)
	}

	got, err := f.client.GetSubscription(ctx, tenantA, created.ID)
	if err != nil || got != created {
		t.Errorf("get: %+v, %v; want %+v", got, err, created)
	}

	renewed, err := f.client.RenewSubscription(ctx, tenantA, created.ID, f.clock.Now().Add(48*time.Hour))
	if err != nil || !renewed.ExpirationDateTime.Equal(f.clock.Now().Add(48*time.Hour)) || renewed.ID != created.ID {
		t.Errorf("renew: %+v, %v", renewed, err)
	}
	if fs := f.fake.Subscriptions(); len(fs) != 1 || !fs[0].ExpirationDateTime.Equal(renewed.ExpirationDateTime) {
		t.Errorf("fake holds %+v", fs)
	}

	list, err := f.client.ListSubscriptions(ctx, tenantA)
	if err != nil || len(list) != 1 || list[0].ID != created.ID {
		t.Errorf("list: %+v, %v", list, err)
	}

	if err := f.client.DeleteSubscription(ctx, tenantA, created.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := f.client.DeleteSubscription(ctx, tenantA, created.ID); err != nil {
		t.Errorf("delete of a deleted subscription: %v, want nil", err)
	}
	if _, err := f.client.GetSubscription(ctx, tenantA, created.ID); !graph.IsNotFound(err) {
		t.Errorf("get after delete: %v, want not found", err)
	}
	for _, r := range f.requests() {
		if r.prefer != `IdType="ImmutableId"` {
			t.Errorf("%s %s without Prefer IdType", r.method, r.path)
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name          string
		setup         func(f *fixture) string // returns a subscription id
		call          func(f *fixture, id string) error
		wantStatus    int
		wantCode      string
		notFound      bool
		throttled     bool
		retryAfter    time.Duration
		hasRetryAfter bool
	}{
		{name: "renew of an unrenewed subscription", setup: func(f *fixture) string {
			s := f.create(tenantA, "inbox")
			f.clock.Advance(71 * time.Hour)
			return s.ID
		}, call: func(f *fixture, id string) error {
			_, err := f.client.RenewSubscription(f.t.Context(), tenantA, id, f.clock.Now().Add(time.Hour))
			return err
		}, wantStatus: 404, wantCode: "ResourceNotFound", notFound: true},
		{name: "throttled with fractional Retry-After", setup: func(f *fixture) string {
			f.fake.Throttle(1, "2.128")
			return ""
		}, call: func(f *fixture, _ string) error {
			_, err := f.client.ListSubscriptions(f.t.Context(), tenantA)
			return err
		}, wantStatus: 429, wantCode: "TooManyRequests", throttled: true, retryAfter: 2128 * time.Millisecond, hasRetryAfter: true},
		{name: "throttled with an HTTP-date Retry-After", setup: func(f *fixture) string {
			f.fake.Throttle(1, f.clock.Now().Add(5*time.Second).Format(http.TimeFormat))
			return ""
		}, call: func(f *fixture, _ string) error {
			_, err := f.client.ListSubscriptions(f.t.Context(), tenantA)
			return err
		}, wantStatus: 429, wantCode: "TooManyRequests", throttled: true, retryAfter: 5 * time.Second, hasRetryAfter: true},
		{name: "throttled without Retry-After", setup: func(f *fixture) string {
			f.fake.Throttle(1, "")
			return ""
		}, call: func(f *fixture, _ string) error {
			_, err := f.client.GetSubscription(f.t.Context(), tenantA, "x")
			return err
		}, wantStatus: 429, wantCode: "TooManyRequests", throttled: true},
		{name: "unavailable", setup: func(f *fixture) string {
			f.fake.FailNext(1, http.StatusServiceUnavailable)
			return ""
		}, call: func(f *fixture, _ string) error {
			return f.client.DeleteSubscription(f.t.Context(), tenantA, "x")
		}, wantStatus: 503, wantCode: "ServiceUnavailable", throttled: true},
		{name: "failed validation", setup: func(f *fixture) string {
			f.fake.SetHandshake(graphfake.HandshakeFail)
			return ""
		}, call: func(f *fixture, _ string) error {
			_, err := f.client.CreateSubscription(f.t.Context(), tenantA, f.newSub("inbox"))
			return err
		}, wantStatus: 400, wantCode: "ValidationError"},
		{name: "expiry beyond Graph's maximum", call: func(f *fixture, _ string) error {
			ns := f.newSub("inbox")
			ns.Expiration = f.clock.Now().Add(72 * time.Hour) // "about three days" is too much
			_, err := f.client.CreateSubscription(f.t.Context(), tenantA, ns)
			return err
		}, wantStatus: 400, wantCode: "ExtensionError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			var id string
			if tt.setup != nil {
				id = tt.setup(f)
			}
			err := tt.call(f, id)
			var ge *graph.Error
			if !errors.As(err, &ge) {
				t.Fatalf("err %v (%T), want *graph.Error", err, err)
			}
			if ge.Status != tt.wantStatus || ge.Code != tt.wantCode || ge.Message == "" || ge.RequestID == "" {
				t.Errorf("error %+v, want status %d code %s with a message and request id", ge, tt.wantStatus, tt.wantCode)
			}
			if graph.IsNotFound(err) != tt.notFound || graph.IsThrottled(err) != tt.throttled {
				t.Errorf("IsNotFound %v IsThrottled %v; want %v %v",
					graph.IsNotFound(err), graph.IsThrottled(err), tt.notFound, tt.throttled)
			}
			if d, ok := graph.RetryAfter(err); d != tt.retryAfter || ok != tt.hasRetryAfter {
				t.Errorf("RetryAfter = %v, %v; want %v, %v", d, ok, tt.retryAfter, tt.hasRetryAfter)
			}
		})
	}
}

func TestNoInternalRetry(t *testing.T) {
	f := newFixture(t)
	f.fake.Throttle(1, "0")
	f.fake.FailNext(1, http.StatusBadGateway)
	if _, err := f.client.ListSubscriptions(t.Context(), tenantA); !graph.IsThrottled(err) {
		t.Fatalf("first call: %v", err)
	}
	if _, err := f.client.ListSubscriptions(t.Context(), tenantA); !graph.IsThrottled(err) {
		t.Fatalf("second call: %v", err)
	}
	if got := f.fake.Calls(http.MethodGet); got != 2 {
		t.Errorf("Graph saw %d calls for 2 client calls", got)
	}
}

// The renewal job is expected to combine Retryable with an httpretry.Policy; this is that use.
func TestRetryableWithPolicy(t *testing.T) {
	f := newFixture(t)
	sub := f.create(tenantA, "inbox")
	f.fake.Throttle(2, "2.128")
	var waits []time.Duration
	policy := httpretry.Policy{MaxRetries: 3, MaxWait: time.Minute,
		Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
	var renewed graph.Subscription
	attempts, err := policy.Run(t.Context(), func(ctx context.Context) error {
		var err error
		renewed, err = f.client.RenewSubscription(ctx, tenantA, sub.ID, f.clock.Now().Add(60*time.Hour))
		return graph.Retryable(err)
	})
	if err != nil || attempts != 3 || renewed.ID != sub.ID {
		t.Fatalf("Run: %d attempts, %v", attempts, err)
	}
	if len(waits) != 2 || waits[0] != 2128*time.Millisecond || waits[1] != 2128*time.Millisecond {
		t.Errorf("waits %v, want Graph's 2.128s twice", waits)
	}

	// A 404 is an answer, not a failure to retry.
	f.fake.Expire(sub.ID)
	attempts, err = policy.Run(t.Context(), func(ctx context.Context) error {
		_, err := f.client.RenewSubscription(ctx, tenantA, sub.ID, f.clock.Now().Add(60*time.Hour))
		return graph.Retryable(err)
	})
	if attempts != 1 || !graph.IsNotFound(err) {
		t.Errorf("404: %d attempts, %v", attempts, err)
	}
}

func TestRetryableClassifies(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		wantRetry bool
	}{
		{name: "nil", err: nil},
		{name: "429", err: &graph.Error{Status: 429}, wantRetry: true},
		{name: "500", err: &graph.Error{Status: 500}, wantRetry: true},
		{name: "501", err: &graph.Error{Status: 501}},
		{name: "404", err: &graph.Error{Status: 404}},
		{name: "invalid argument", err: graph.ErrInvalid},
		{name: "token endpoint unavailable", err: &graph.TokenError{Status: 503}, wantRetry: true},
		{name: "token refused", err: &graph.TokenError{Status: 401, Code: "invalid_client"}},
		{name: "token endpoint out of reach", err: &graph.TokenError{Err: errors.New("connection refused")}, wantRetry: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r *httpretry.Retry
			got := graph.Retryable(tt.err)
			if errors.As(got, &r) != tt.wantRetry {
				t.Errorf("Retryable(%v) = %v, want retry %v", tt.err, got, tt.wantRetry)
			}
			if !tt.wantRetry && got != tt.err {
				t.Errorf("Retryable changed a final error: %v", got)
			}
		})
	}
}

func TestCreateRefusesBeforeSending(t *testing.T) {
	tests := []struct {
		name   string
		change func(*graph.NewSubscription)
	}{
		{name: "clientState of 129 characters", change: func(s *graph.NewSubscription) { s.ClientState = strings.Repeat("é", 129) }},
		{name: "no mailbox", change: func(s *graph.NewSubscription) { s.Mailbox = "" }},
		{name: "no folder", change: func(s *graph.NewSubscription) { s.FolderID = "" }},
		{name: "no expiration", change: func(s *graph.NewSubscription) { s.Expiration = time.Time{} }},
		{name: "relative notification URL", change: func(s *graph.NewSubscription) { s.NotificationURL = "/api/providerwebhook" }},
		{name: "bad lifecycle URL", change: func(s *graph.NewSubscription) { s.LifecycleNotificationURL = "mailto:x@y" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			ns := f.newSub("inbox")
			tt.change(&ns)
			_, err := f.client.CreateSubscription(t.Context(), tenantA, ns)
			if !errors.Is(err, graph.ErrInvalid) {
				t.Errorf("err %v, want ErrInvalid", err)
			}
			if f.fake.Calls(http.MethodPost) != 0 || f.fake.TokenRequests(tenantA) != 0 {
				t.Error("an invalid create was sent")
			}
		})
	}
	t.Run("clientState of 128 characters", func(t *testing.T) {
		f := newFixture(t)
		ns := f.newSub("inbox")
		ns.ClientState = strings.Repeat("é", 128)
		if _, err := f.client.CreateSubscription(t.Context(), tenantA, ns); err != nil {
			t.Error(err)
		}
	})
}

func TestInvalidIDsAndTenants(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name string
		call func() error
	}{
		{name: "renew without id", call: func() error {
			_, err := f.client.RenewSubscription(t.Context(), tenantA, "", f.clock.Now().Add(time.Hour))
			return err
		}},
		{name: "get without id", call: func() error { _, err := f.client.GetSubscription(t.Context(), tenantA, ""); return err }},
		{name: "delete without id", call: func() error { return f.client.DeleteSubscription(t.Context(), tenantA, "") }},
		{name: "empty tenant", call: func() error { _, err := f.client.ListSubscriptions(t.Context(), ""); return err }},
		{name: "tenant with a slash", call: func() error { _, err := f.client.ListSubscriptions(t.Context(), "a/../b"); return err }},
		{name: "tenant of dots", call: func() error { _, err := f.client.ListSubscriptions(t.Context(), ".."); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, graph.ErrInvalid) {
				t.Errorf("err %v, want ErrInvalid", err)
			}
		})
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests reached Graph", n)
	}
}

func TestIDsArePathEscaped(t *testing.T) {
	f := newFixture(t)
	_, err := f.client.GetSubscription(t.Context(), tenantA, "a/b?c")
	if !graph.IsNotFound(err) {
		t.Fatalf("err %v", err)
	}
	if r := f.requests(); len(r) != 1 || r[0].path != "/v1.0/subscriptions/a/b?c" {
		t.Errorf("requests %+v", r)
	}
}

func TestListFollowsNextLink(t *testing.T) {
	f := newFixture(t, func(o *graphfake.Options) { o.ListPageSize = 2 })
	want := map[string]bool{}
	for _, folder := range []string{"f1", "f2", "f3", "f4", "f5"} {
		want[f.create(tenantA, folder).ID] = true
	}
	f.create(tenantB, "f1")
	list, err := f.client.ListSubscriptions(t.Context(), tenantA)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(want) {
		t.Fatalf("%d subscriptions, want %d", len(list), len(want))
	}
	for _, s := range list {
		if !want[s.ID] {
			t.Errorf("unexpected %s", s.ID)
		}
	}
	if got := f.fake.Calls(http.MethodGet); got != 3 {
		t.Errorf("%d pages fetched, want 3", got)
	}
}

// stubGraph serves fixed replies, for what the fake never does wrong.
func stubGraph(t *testing.T, h http.HandlerFunc) *graph.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/token") {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"token_type":"Bearer","expires_in":3599,"access_token":"t"}`))
			return
		}
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := graph.New(graph.Config{ClientID: "id", ClientSecret: "secret",
		TokenURL: srv.URL + "/{tenant}/token", BaseURL: srv.URL + "/v1.0"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMisbehavingServer(t *testing.T) {
	foreignHit := make(chan string, 1)
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		foreignHit <- r.Header.Get("Authorization")
		_, _ = w.Write([]byte(`{"value":[]}`))
	}))
	t.Cleanup(foreign.Close)

	tests := []struct {
		name    string
		handler http.HandlerFunc
		call    func(c *graph.Client) error
		wantErr string
	}{
		{name: "nextLink to another host", handler: func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"value":[],"@odata.nextLink":"` + foreign.URL + `/v1.0/subscriptions?$skiptoken=1"}`))
		}, call: func(c *graph.Client) error { _, err := c.ListSubscriptions(t.Context(), tenantA); return err }, wantErr: "not followed"},
		{name: "nextLink to itself", handler: func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"value":[],"@odata.nextLink":"http://` + r.Host + `/v1.0/subscriptions"}`))
		}, call: func(c *graph.Client) error { _, err := c.ListSubscriptions(t.Context(), tenantA); return err }, wantErr: "does not end"},
		{name: "reply over 1 MiB", handler: func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"id":"x","resource":"` + strings.Repeat("a", 2<<20) + `"}`))
		}, call: func(c *graph.Client) error { _, err := c.GetSubscription(t.Context(), tenantA, "x"); return err }, wantErr: "larger than"},
		{name: "not JSON", handler: func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`<html>`))
		}, call: func(c *graph.Client) error { _, err := c.GetSubscription(t.Context(), tenantA, "x"); return err }, wantErr: "malformed"},
		{name: "no expiry", handler: func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"id":"x"}`))
		}, call: func(c *graph.Client) error { _, err := c.GetSubscription(t.Context(), tenantA, "x"); return err }, wantErr: "expirationDateTime"},
		{name: "proxy error page", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`<html>bad gateway</html>`))
		}, call: func(c *graph.Client) error { _, err := c.GetSubscription(t.Context(), tenantA, "x"); return err }, wantErr: "status 502: <html>bad gateway</html>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := stubGraph(t, tt.handler)
			err := tt.call(c)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err %v, want one mentioning %q", err, tt.wantErr)
			}
		})
	}
	select {
	case auth := <-foreignHit:
		t.Errorf("the foreign host received a request (Authorization %q)", auth)
	default:
	}
}

// The create has its own, longer budget than the other subscription calls: Graph validates both
// URLs during it. A create Graph finishes after the client gave up is made all the same, and
// MaybeCreated says so.
func TestCreateTimeout(t *testing.T) {
	f := newFixture(t)
	c := f.newClient(clientSecret, func(c *graph.Config) {
		c.CallTimeout, c.CreateTimeout = 100*time.Millisecond, 2*time.Second
	})
	f.fake.SetCreateDelay(300 * time.Millisecond) // longer than any other call may take
	if _, err := c.CreateSubscription(t.Context(), tenantA, f.newSub("inbox")); err != nil {
		t.Fatalf("a create within its own budget: %v", err)
	}
	f.fake.SetCreateDelay(3 * time.Second)
	_, err := c.CreateSubscription(t.Context(), tenantA, f.newSub("inbox"))
	if err == nil || !graph.MaybeCreated(err) {
		t.Fatalf("a create over its budget: %v, want MaybeCreated", err)
	}
	if graph.MaybeCreated(&graph.Error{Status: 400}) || graph.MaybeCreated(&graph.Error{Status: 429}) || !graph.MaybeCreated(&graph.Error{Status: 504}) {
		t.Error("MaybeCreated: 400 and 429 made nothing, a 504 may have")
	}
}
