package graphfake

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var guidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestCreateAnswersTheSubscription(t *testing.T) {
	e := newEnv(t)
	tok := e.token(tenantA)
	body := e.newSub("agent@contoso.example", "AAMkAD'x=")
	body["resource"] = "/users/agent@contoso.example/mailFolders('AAMkAD''x=')/messages"
	body["lifecycleNotificationUrl"] = e.recv.url("/api/providerwebhook/lifecycle")
	r := e.call(http.MethodPost, "/subscriptions", tok, body)
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var raw map[string]any
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"@odata.context", "id", "resource", "applicationId", "changeType", "clientState",
		"notificationUrl", "lifecycleNotificationUrl", "expirationDateTime", "creatorId", "latestSupportedTlsVersion", "tenantId"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("reply lacks %q: %s", k, r.body)
		}
	}
	sub := r.subscription(t)
	if !guidRE.MatchString(sub.ID) {
		t.Errorf("id %q is not a GUID", sub.ID)
	}
	if sub.ExpirationDateTime != body["expirationDateTime"] || sub.ApplicationID != testClientID ||
		sub.LatestSupportedTLSVersion != "v1_2" || sub.Resource != body["resource"] || *sub.ClientState != body["clientState"] {
		t.Errorf("reply %+v does not echo %v", sub, body)
	}
	if !strings.HasSuffix(sub.ODataContext, "/v1.0/$metadata#subscriptions/$entity") {
		t.Errorf("@odata.context %q", sub.ODataContext)
	}
	snap := e.fake.Subscriptions()
	if len(snap) != 1 || snap[0].Mailbox != "agent@contoso.example" || snap[0].FolderID != "AAMkAD'x=" || !guidRE.MatchString(snap[0].UserID) {
		t.Errorf("snapshot %+v", snap)
	}
	if got := len(e.recv.gotHandshakes()); got != 2 {
		t.Errorf("%d handshakes, want one per URL (2)", got)
	}
}

func TestCreateRefusesInvalidBodies(t *testing.T) {
	tests := []struct {
		name     string
		change   func(e *env, b map[string]any)
		wantCode string
	}{
		{name: "updated change type", change: func(_ *env, b map[string]any) { b["changeType"] = "updated" }, wantCode: "InvalidRequest"},
		{name: "no change type", change: func(_ *env, b map[string]any) { delete(b, "changeType") }, wantCode: "InvalidRequest"},
		{name: "whole mailbox resource", change: func(_ *env, b map[string]any) { b["resource"] = "/users/a@b.example/messages" }, wantCode: "InvalidRequest"},
		{name: "me resource", change: func(_ *env, b map[string]any) { b["resource"] = "me/mailFolders('inbox')/messages" }, wantCode: "InvalidRequest"},
		{name: "unterminated folder id", change: func(_ *env, b map[string]any) { b["resource"] = "/users/a/mailFolders('inbox/messages" }, wantCode: "InvalidRequest"},
		{name: "relative notification URL", change: func(_ *env, b map[string]any) { b["notificationUrl"] = "/api/providerwebhook" }, wantCode: "InvalidRequest"},
		{name: "ftp notification URL", change: func(_ *env, b map[string]any) { b["notificationUrl"] = "ftp://example.com/x" }, wantCode: "InvalidRequest"},
		{name: "http notification URL", change: func(_ *env, b map[string]any) { b["notificationUrl"] = "http://example.com/api/providerwebhook" }, wantCode: "InvalidRequest"},
		{name: "http lifecycle URL", change: func(_ *env, b map[string]any) {
			b["lifecycleNotificationUrl"] = "http://example.com/api/providerwebhook"
		}, wantCode: "InvalidRequest"},
		{name: "no notification URL", change: func(_ *env, b map[string]any) { delete(b, "notificationUrl") }, wantCode: "InvalidRequest"},
		{name: "bad lifecycle URL", change: func(_ *env, b map[string]any) { b["lifecycleNotificationUrl"] = "nope" }, wantCode: "InvalidRequest"},
		{name: "clientState of 129 characters", change: func(_ *env, b map[string]any) { b["clientState"] = strings.Repeat("ü", 129) }, wantCode: "InvalidRequest"},
		{name: "unknown property", change: func(_ *env, b map[string]any) { b["folder"] = "inbox" }, wantCode: "BadRequest"},
		{name: "rich notifications", change: func(_ *env, b map[string]any) { b["includeResourceData"] = true }, wantCode: "InvalidRequest"},
		{name: "unparsable expiry", change: func(_ *env, b map[string]any) { b["expirationDateTime"] = "tomorrow" }, wantCode: "InvalidRequest"},
		{name: "no expiry", change: func(_ *env, b map[string]any) { delete(b, "expirationDateTime") }, wantCode: "InvalidRequest"},
		{name: "expiry in the past", change: func(e *env, b map[string]any) {
			b["expirationDateTime"] = formatTime(e.clock.Now().Add(-time.Minute))
		}, wantCode: "InvalidRequest"},
		{name: "expiry beyond 4230 minutes", change: func(e *env, b map[string]any) {
			b["expirationDateTime"] = formatTime(e.clock.Now().Add(DefaultMaxLifetime + time.Second))
		}, wantCode: "ExtensionError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			body := e.newSub("agent@contoso.example", "inbox")
			tt.change(e, body)
			r := e.call(http.MethodPost, "/subscriptions", e.token(tenantA), body)
			if r.status != http.StatusBadRequest || r.errorCode() != tt.wantCode {
				t.Fatalf("got %d %s, want 400 %s", r.status, r.body, tt.wantCode)
			}
			if len(e.recv.gotHandshakes()) != 0 || len(e.fake.Subscriptions()) != 0 {
				t.Error("an invalid create reached the handshake or was stored")
			}
		})
	}
}

func TestCreateAcceptsTheLongestLifetime(t *testing.T) {
	tests := []struct {
		name        string
		maxLifetime time.Duration
		ahead       time.Duration
	}{
		{name: "default maximum", ahead: DefaultMaxLifetime},
		{name: "configured maximum", maxLifetime: 10080 * time.Minute, ahead: 10080 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.MaxLifetime = tt.maxLifetime })
			body := e.newSub("a@b.example", "inbox")
			body["expirationDateTime"] = e.clock.Now().Add(tt.ahead).Format(time.RFC3339Nano)
			e.create(e.token(tenantA), body)
		})
	}
}

func TestParseResource(t *testing.T) {
	tests := []struct {
		name, resource, mailbox, folder string
		ok                              bool
	}{
		{name: "quoted", resource: "/users/a@b.example/mailFolders('AAMk-_=')/messages", mailbox: "a@b.example", folder: "AAMk-_=", ok: true},
		{name: "no leading slash", resource: "users/a@b.example/mailFolders('inbox')/messages", mailbox: "a@b.example", folder: "inbox", ok: true},
		{name: "other case", resource: "/Users/a@b.example/MailFolders('Inbox')/Messages", mailbox: "a@b.example", folder: "Inbox", ok: true},
		{name: "slash form", resource: "/users/a@b.example/mailFolders/inbox/messages", mailbox: "a@b.example", folder: "inbox", ok: true},
		{name: "doubled quote", resource: "/users/x/mailFolders('it''s')/messages", mailbox: "x", folder: "it's", ok: true},
		{name: "escaped mailbox", resource: "/users/o%27brien%40b.example/mailFolders('inbox')/messages", mailbox: "o'brien@b.example", folder: "inbox", ok: true},
		{name: "empty folder", resource: "/users/x/mailFolders('')/messages"},
		{name: "trailing segment", resource: "/users/x/mailFolders('inbox')/messages/extra"},
		{name: "single quote unpaired", resource: "/users/x/mailFolders('a'b')/messages"},
		{name: "no mailbox", resource: "/users//mailFolders('inbox')/messages"},
		{name: "events", resource: "/users/x/events"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mailbox, folder, ok := parseResource(tt.resource)
			if ok != tt.ok || mailbox != tt.mailbox || folder != tt.folder {
				t.Errorf("parseResource(%q) = %q, %q, %v; want %q, %q, %v", tt.resource, mailbox, folder, ok, tt.mailbox, tt.folder, tt.ok)
			}
		})
	}
}

func TestRenewGetDelete(t *testing.T) {
	e := newEnv(t)
	tok := e.token(tenantA)
	sub := e.create(tok, e.newSub("a@b.example", "inbox"))

	later := e.clock.Now().Add(70 * time.Hour).Add(123456789 * time.Nanosecond)
	r := e.call(http.MethodPatch, "/subscriptions/"+sub.ID, tok, map[string]any{"expirationDateTime": later.Format(time.RFC3339Nano)})
	if r.status != http.StatusOK {
		t.Fatalf("renew: %d %s", r.status, r.body)
	}
	if got := r.subscription(t).ExpirationDateTime; got != "2026-11-26T08:00:00.1234567Z" {
		t.Errorf("renewed expiry %s", got)
	}
	if got := e.call(http.MethodGet, "/subscriptions/"+sub.ID, tok, nil).subscription(t).ExpirationDateTime; got != "2026-11-26T08:00:00.1234567Z" {
		t.Errorf("GET after renew: expiry %s", got)
	}
	if n := e.fake.Renewals(sub.ID); n != 1 {
		t.Errorf("Renewals %d after one renewal", n)
	}

	tests := []struct {
		name     string
		body     map[string]any
		wantCode string
	}{
		{name: "another property", body: map[string]any{"expirationDateTime": formatTime(later), "notificationUrl": "https://x.example/"}, wantCode: "InvalidRequest"},
		{name: "no expiry", body: map[string]any{}, wantCode: "InvalidRequest"},
		{name: "too far", body: map[string]any{"expirationDateTime": formatTime(e.clock.Now().Add(DefaultMaxLifetime + time.Minute))}, wantCode: "ExtensionError"},
		{name: "past", body: map[string]any{"expirationDateTime": formatTime(e.clock.Now().Add(-time.Minute))}, wantCode: "InvalidRequest"},
	}
	for _, tt := range tests {
		t.Run("renew refuses "+tt.name, func(t *testing.T) {
			r := e.call(http.MethodPatch, "/subscriptions/"+sub.ID, tok, tt.body)
			if r.status != http.StatusBadRequest || r.errorCode() != tt.wantCode {
				t.Errorf("got %d %s, want 400 %s", r.status, r.body, tt.wantCode)
			}
		})
	}

	if r := e.call(http.MethodDelete, "/subscriptions/"+sub.ID, tok, nil); r.status != http.StatusNoContent || len(r.body) != 0 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	for _, method := range []string{http.MethodGet, http.MethodPatch, http.MethodDelete} {
		r := e.call(method, "/subscriptions/"+sub.ID, tok, map[string]any{"expirationDateTime": formatTime(later)})
		if r.status != http.StatusNotFound || r.errorCode() != "ResourceNotFound" {
			t.Errorf("%s after delete: %d %s", method, r.status, r.body)
		}
	}
}

func TestSubscriptionExpiresByTheClock(t *testing.T) {
	e := newEnv(t)
	tok := e.token(tenantA)
	body := e.newSub("a@b.example", "inbox")
	body["expirationDateTime"] = formatTime(e.clock.Now().Add(30 * time.Minute))
	sub := e.create(tok, body)

	e.clock.Advance(29 * time.Minute)
	if r := e.call(http.MethodGet, "/subscriptions/"+sub.ID, tok, nil); r.status != http.StatusOK {
		t.Fatalf("GET before expiry: %d", r.status)
	}
	e.clock.Advance(time.Minute)
	tests := []struct {
		name, method string
		body         any
	}{
		{name: "get", method: http.MethodGet},
		{name: "renew", method: http.MethodPatch, body: map[string]any{"expirationDateTime": formatTime(e.clock.Now().Add(time.Hour))}},
		{name: "delete", method: http.MethodDelete},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r := e.call(tt.method, "/subscriptions/"+sub.ID, tok, tt.body); r.status != http.StatusNotFound {
				t.Errorf("%s after expiry: %d %s, want 404", tt.method, r.status, r.body)
			}
		})
	}
	var list listJSON
	if err := json.Unmarshal(e.call(http.MethodGet, "/subscriptions", tok, nil).body, &list); err != nil || len(list.Value) != 0 {
		t.Errorf("list after expiry: %+v %v", list, err)
	}
	if len(e.fake.Subscriptions()) != 0 {
		t.Error("snapshot still has the expired subscription")
	}
	// An expired subscription no longer blocks a new one for the same folder.
	body["expirationDateTime"] = formatTime(e.clock.Now().Add(time.Hour))
	e.create(tok, body)
}

func TestExpireDropsTheSubscription(t *testing.T) {
	e := newEnv(t)
	tok := e.token(tenantA)
	sub := e.create(tok, e.newSub("a@b.example", "inbox"))
	if !e.fake.Expire(sub.ID) || e.fake.Expire(sub.ID) {
		t.Fatal("Expire should report true once, then false")
	}
	if r := e.call(http.MethodPatch, "/subscriptions/"+sub.ID, tok, map[string]any{"expirationDateTime": formatTime(e.clock.Now().Add(time.Hour))}); r.status != http.StatusNotFound {
		t.Errorf("renew after Expire: %d", r.status)
	}
}

// Graph does not refuse a second subscription for the same resource, change type and URL: each
// create gets its own id, concurrent ones too, and the list shows them all.
func TestEveryCreateGetsItsOwnID(t *testing.T) {
	e := newEnv(t)
	tok := e.token(tenantA)
	first := e.create(tok, e.newSub("a@b.example", "inbox"))
	body := e.newSub("a@b.example", "inbox")
	body["resource"] = "users/A@B.example/mailFolders/inbox/messages"
	second := e.create(tok, body)
	const n = 6
	ids := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { ids <- e.create(tok, e.newSub("a@b.example", "inbox")).ID })
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{first.ID: true, second.ID: true}
	for id := range ids {
		seen[id] = true
	}
	if len(seen) != n+2 || len(e.fake.Subscriptions()) != n+2 {
		t.Fatalf("%d distinct ids, %d live subscriptions; want %d of each", len(seen), len(e.fake.Subscriptions()), n+2)
	}
}

// A slow create (SetCreateDelay) is made even when its client gave up waiting: an orphan, as at
// Graph, which the client finds by listing.
func TestSlowCreateIsMadeAfterTheClientGaveUp(t *testing.T) {
	e := newEnv(t)
	tok := e.token(tenantA)
	e.fake.SetCreateDelay(300 * time.Millisecond)
	raw, err := json.Marshal(e.newSub("a@b.example", "inbox"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.srv.URL+"/v1.0/subscriptions", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the client got an answer (%d) before giving up", resp.StatusCode)
	}
	for deadline := time.Now().Add(10 * time.Second); len(e.fake.Subscriptions()) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the create the client gave up on was never made")
		}
	}
	e.fake.SetCreateDelay(0)
	if r := e.call(http.MethodGet, "/subscriptions", tok, nil); r.status != http.StatusOK || !strings.Contains(string(r.body), e.fake.Subscriptions()[0].ID) {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
}

func TestListFollowsPages(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.ListPageSize = 2 })
	tok := e.token(tenantA)
	want := map[string]bool{}
	for _, folder := range []string{"f1", "f2", "f3", "f4", "f5"} {
		want[e.create(tok, e.newSub("a@b.example", folder)).ID] = true
	}
	e.create(e.token(tenantB), e.newSub("a@b.example", "f1")) // not in tenant A's list

	got := map[string]bool{}
	pages := 0
	for next := "/subscriptions"; next != ""; pages++ {
		r := e.call(http.MethodGet, next, tok, nil)
		var list listJSON
		if err := json.Unmarshal(r.body, &list); err != nil || r.status != http.StatusOK {
			t.Fatalf("list: %d %s", r.status, r.body)
		}
		if pages == 1 {
			// Deleting a listed subscription between pages neither repeats nor skips the rest.
			for id := range got {
				e.call(http.MethodDelete, "/subscriptions/"+id, tok, nil)
				break
			}
		}
		for _, s := range list.Value {
			if got[s.ID] {
				t.Errorf("%s listed twice", s.ID)
			}
			got[s.ID] = true
		}
		next = list.ODataNextLink
	}
	if pages != 3 || len(got) != len(want) {
		t.Errorf("%d pages, %d subscriptions; want 3 pages, %d", pages, len(got), len(want))
	}
	for id := range want {
		if !got[id] {
			t.Errorf("%s missing", id)
		}
	}
}

func TestFaults(t *testing.T) {
	e := newEnv(t)
	tok := e.token(tenantA)
	e.fake.Throttle(2, "2.128")
	e.fake.FailNext(1, http.StatusServiceUnavailable)
	want := []struct {
		status     int
		code       string
		retryAfter string
	}{
		{http.StatusTooManyRequests, "TooManyRequests", "2.128"},
		{http.StatusTooManyRequests, "TooManyRequests", "2.128"},
		{http.StatusServiceUnavailable, "ServiceUnavailable", ""},
		{http.StatusOK, "", ""},
	}
	for i, w := range want {
		r := e.call(http.MethodGet, "/subscriptions", tok, nil)
		if r.status != w.status || r.errorCode() != w.code || r.header.Get("Retry-After") != w.retryAfter {
			t.Errorf("call %d: %d %q Retry-After %q; want %d %q %q", i, r.status, r.errorCode(), r.header.Get("Retry-After"), w.status, w.code, w.retryAfter)
		}
	}
	if got := e.fake.Calls(http.MethodGet); got != len(want) {
		t.Errorf("Calls(GET) = %d, want %d", got, len(want))
	}
}

func TestUnauthenticatedCallsDoNotConsumeFaults(t *testing.T) {
	e := newEnv(t)
	e.fake.Throttle(1, "1")
	if r := e.call(http.MethodGet, "/subscriptions", "", nil); r.status != http.StatusUnauthorized {
		t.Fatalf("no token: %d", r.status)
	}
	if r := e.call(http.MethodGet, "/subscriptions", e.token(tenantA), nil); r.status != http.StatusTooManyRequests {
		t.Errorf("first authenticated call: %d, want 429", r.status)
	}
}

func TestUnknownGraphPath(t *testing.T) {
	e := newEnv(t)
	if r := e.call(http.MethodPut, "/subscriptions/x", e.token(tenantA), nil); r.status != http.StatusBadRequest || r.errorCode() != "BadRequest" {
		t.Errorf("PUT: %d %s", r.status, r.body)
	}
}

// Graph refuses an http notification URL; a test that needs one says so.
func TestHTTPNotificationURLOnlyWhenAllowed(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.AllowHTTPNotificationURL = true })
	e.fake.SetHandshake(HandshakeSkip)
	body := e.newSub("a@b.example", "inbox")
	body["notificationUrl"] = "http://support.example/api/providerwebhook"
	if r := e.call(http.MethodPost, "/subscriptions", e.token(tenantA), body); r.status != http.StatusCreated {
		t.Fatalf("with AllowHTTPNotificationURL: %d %s", r.status, r.body)
	}
}
