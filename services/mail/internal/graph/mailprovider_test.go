package graph_test

import (
	"errors"
	"testing"
	"time"

	"supportplatform.dev/services/mail/internal/graph"
	"supportplatform.dev/services/mail/internal/mail"
)

// The adapter the subscription service uses, against the fake Graph: the
// domain's error classes come out of Graph's real answers.
func TestMailProvider(t *testing.T) {
	f := newFixture(t)
	p, err := graph.NewMailProvider(graph.Settings{ClientID: clientID, ClientSecret: clientSecret,
		TokenURL: f.srv.URL + "/{tenant}/oauth2/v2.0/token", BaseURL: f.srv.URL + "/v1.0"}, f.srv.Client(), f.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ns := f.newSub("inbox")
	req := mail.NewProviderSubscription{Mailbox: ns.Mailbox, FolderID: ns.FolderID, NotificationURL: ns.NotificationURL,
		LifecycleNotificationURL: ns.NotificationURL, ClientState: ns.ClientState, Expiration: ns.Expiration}
	sub, err := p.Create(ctx, tenantA, req)
	if err != nil || sub.ID == "" || sub.ClientState != ns.ClientState || !sub.Expiration.Equal(ns.Expiration) ||
		sub.Resource != "/users/agent@contoso.example/mailFolders('inbox')/messages" {
		t.Fatalf("create: %+v %v", sub, err)
	}
	// Graph makes a second subscription for the same resource: its own id.
	second, err := p.Create(ctx, tenantA, req)
	if err != nil || second.ID == sub.ID {
		t.Fatalf("second create: %+v %v", second, err)
	}
	if subs, err := p.List(ctx, tenantA); err != nil || len(subs) != 2 || subs[0].ID != sub.ID || subs[1].ID != second.ID {
		t.Fatalf("list: %+v %v", subs, err)
	}
	if err := p.Delete(ctx, tenantA, second.ID); err != nil {
		t.Fatal(err)
	}
	// A 5xx of a create may have made it: the domain is told so.
	f.fake.FailNext(1, 503)
	if _, err := p.Create(ctx, tenantA, req); !errors.Is(err, mail.ErrProviderMaybeCreated) {
		t.Fatalf("create answered 503: %v, want ErrProviderMaybeCreated", err)
	}
	// A refusal made nothing.
	f.fake.FailNext(1, 400)
	if _, err := p.Create(ctx, tenantA, req); err == nil || errors.Is(err, mail.ErrProviderMaybeCreated) {
		t.Fatalf("create answered 400: %v, want no ErrProviderMaybeCreated", err)
	}
	later := f.clock.Now().Add(69*time.Hour + 1234567*time.Nanosecond)
	// Graph keeps 100 ns; the domain gets PostgreSQL's microseconds.
	if r, err := p.Renew(ctx, tenantA, sub.ID, later); err != nil || !r.Expiration.Equal(later.Truncate(time.Microsecond)) {
		t.Fatalf("renew: %+v %v", r, err)
	}
	f.fake.Throttle(1, "2.128")
	_, err = p.Renew(ctx, tenantA, sub.ID, later)
	var th *mail.ProviderThrottled
	if !errors.As(err, &th) || th.RetryAfter != 2128*time.Millisecond {
		t.Fatalf("throttled renew: %v", err)
	}
	f.fake.Expire(sub.ID)
	if _, err := p.Renew(ctx, tenantA, sub.ID, later); !errors.Is(err, mail.ErrProviderNotFound) {
		t.Fatalf("renew of a deleted subscription: %v, want ErrProviderNotFound", err)
	}
	if err := p.Delete(ctx, tenantA, sub.ID); err != nil {
		t.Fatalf("delete of a gone subscription: %v", err)
	}

	none, err := graph.NewMailProvider(graph.Settings{}, nil, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := none.Create(ctx, tenantA, req); !errors.Is(err, graph.ErrNotConfigured) {
		t.Fatalf("unconfigured create: %v", err)
	}
	if _, err := graph.NewMailProvider(graph.Settings{ClientID: clientID}, nil, time.Now); err == nil {
		t.Fatal("an app without a secret was accepted")
	}
}
