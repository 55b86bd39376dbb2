package mail_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/services/mail/internal/graph"
	"supportplatform.dev/services/mail/internal/mail"
	"supportplatform.dev/services/mail/internal/postgres"
)

// graphEnv is env with the real Graph client (through the adapter) against
// the fake Graph instead of the in-memory provider.
type graphEnv struct {
	*env
	fake *graphfake.Server
	prov mail.Provider
	svc  *mail.SubscriptionService
	reg  *prometheus.Registry
}

func newGraphEnv(t *testing.T, createTimeout time.Duration) *graphEnv {
	t.Helper()
	e := newEnv(t)
	fake := graphfake.New(graphfake.Options{ClientID: "app", ClientSecret: "secret", Now: e.clock.Now})
	fake.SetHandshake(graphfake.HandshakeSkip) // no receiver in these tests
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	prov, err := graph.NewMailProvider(graph.Settings{ClientID: "app", ClientSecret: "secret",
		TokenURL: srv.URL + "/{tenant}/oauth2/v2.0/token", BaseURL: srv.URL + "/v1.0", CreateTimeout: createTimeout},
		&http.Client{}, e.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := mail.NewSubscriptionMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	svc := mail.NewSubscriptionService(mail.SubscriptionOptions{Store: postgres.New(e.pool, e.clock.Now), Provider: prov,
		PublicBaseURL: baseURL, Lifetime: 70 * time.Hour, CreateTimeout: createTimeout, Metrics: m, Now: e.clock.Now,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return &graphEnv{env: e, fake: fake, prov: prov, svc: svc, reg: reg}
}

// live returns the fake's subscriptions of mailbox's folder, whichever way
// their resources name the mailbox.
func (g *graphEnv) live(mailbox, folder string) map[string]graphfake.Subscription {
	out := map[string]graphfake.Subscription{}
	for _, s := range g.fake.Subscriptions() {
		if s.UserID == g.fake.UserID(tenantA, mailbox) && s.FolderID == folder {
			out[s.ID] = s
		}
	}
	return out
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return -1
}

// Graph answers no 409 for a second subscription: a create the client gave
// up on (its timeout) that Graph finished later is an orphan beside the
// folder's next one. The folder's next attempt lists the app's
// subscriptions and deletes every one of its resource and notification URL
// that is not stored, and nothing else: not another URL's. (Another
// customer's folder of the same mailbox cannot exist any more: a mailbox is
// live in one customer's microsoft365 channel, and a tenant is connected to
// one customer.)
func TestOrphanOfATimedOutCreateIsDeleted(t *testing.T) {
	g := newGraphEnv(t, 500*time.Millisecond)
	ctx := context.Background()
	c, fs := g.channel(t, customerA, m365(true), "inbox")

	// Another application's subscription of the resource (another URL).
	// (Made directly at the fake, as another deployment would.)
	foreign := mail.NewSubscriptionService(mail.SubscriptionOptions{Store: postgres.New(g.pool, g.clock.Now),
		Provider: g.prov, PublicBaseURL: "https://other.example.com", Now: g.clock.Now})
	if out, err := foreign.SyncChannel(ctx, customerA, c.ID); err != nil || out[0].Outcome != mail.OutcomeSubscribed {
		t.Fatalf("foreign: %+v %v", out, err)
	}
	foreignID := g.row(t, fs[0].ID).SubscriptionID
	g.sqlExec(t, `UPDATE channel_folders SET provider_subscription_id = NULL, provider_subscription_expiration = NULL
		WHERE folder_id = $1`, fs[0].ID)

	// Graph takes longer than the client waits: the create fails, and the
	// subscription is made after it gave up.
	g.fake.SetCreateDelay(1500 * time.Millisecond)
	out, err := g.svc.SyncChannel(ctx, customerA, c.ID)
	if err != nil || out[0].Outcome != mail.OutcomeFailed {
		t.Fatalf("a create over its time: %+v %v", out, err)
	}
	r := g.row(t, fs[0].ID)
	if r.SubscriptionID != "" || r.RenewRequested == nil || r.RenewRequested.After(g.clock.Now().Add(time.Second)) {
		t.Fatalf("folder after the timed-out create: %+v (its retry is due once Graph has finished)", r)
	}
	var orphan string
	for deadline := time.Now().Add(15 * time.Second); orphan == ""; time.Sleep(20 * time.Millisecond) {
		for id := range g.live(c.EmailAddress, "inbox") {
			if id != foreignID {
				orphan = id
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("Graph never made the create the client gave up on")
		}
	}
	g.fake.SetCreateDelay(0)

	// The retry (the renewal job, or the admin's next toggle) deletes the
	// orphan before it creates.
	g.clock.Advance(time.Second)
	out, err = g.svc.SyncChannel(ctx, customerA, c.ID)
	if err != nil || out[0].Outcome != mail.OutcomeSubscribed {
		t.Fatalf("the retry: %+v %v", out, err)
	}
	stored := g.row(t, fs[0].ID).SubscriptionID
	live := g.live(c.EmailAddress, "inbox")
	if _, ok := live[orphan]; ok {
		t.Fatalf("the orphan %s lives on: %+v", orphan, live)
	}
	if len(live) != 2 || live[stored].ID == "" || live[foreignID].ID == "" {
		t.Fatalf("live %+v; want the stored %s and the foreign %s", live, stored, foreignID)
	}
	if n := counterValue(t, g.reg, "mail_subscription_orphans_deleted_total"); n != 1 {
		t.Fatalf("orphans deleted: %v", n)
	}
}

// A 5xx of a create may have made the subscription too: the folder's
// orphans are deleted at once, before the retry.
func TestOrphansDeletedAfterA5xxCreate(t *testing.T) {
	g := newGraphEnv(t, 5*time.Second)
	ctx := context.Background()
	c, fs := g.channel(t, customerA, m365(true), "inbox")
	// What an earlier create Graph failed with a 5xx had made anyway.
	orphan, err := g.prov.Create(ctx, tenantA, mail.NewProviderSubscription{Mailbox: c.EmailAddress, FolderID: "inbox",
		NotificationURL: g.svc.NotificationURL(), Expiration: g.clock.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	// The mailbox is resolved already: the 504 is the create's.
	u, err := g.prov.ResolveMailbox(ctx, tenantA, c.EmailAddress)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.store.SaveMailboxUser(ctx, customerA, c.ID, u); err != nil {
		t.Fatal(err)
	}
	g.fake.FailNext(1, http.StatusGatewayTimeout)
	out, err := g.svc.SyncChannel(ctx, customerA, c.ID)
	if err != nil || out[0].Outcome != mail.OutcomeFailed {
		t.Fatalf("%+v %v", out, err)
	}
	if _, ok := g.live(c.EmailAddress, "inbox")[orphan.ID]; ok {
		t.Fatal("the orphan was not deleted after the 504")
	}
	g.clock.Advance(time.Minute)
	if out, err := g.svc.SyncChannel(ctx, customerA, c.ID); err != nil || out[0].Outcome != mail.OutcomeSubscribed {
		t.Fatalf("%+v %v", out, err)
	}
	if live := g.live(c.EmailAddress, "inbox"); len(live) != 1 || live[g.row(t, fs[0].ID).SubscriptionID].ID == "" {
		t.Fatalf("live %+v", live)
	}
}

// A toggle answers within its request's budget (REQUEST_TIMEOUT): a folder
// whose create could outlast it is not attempted and left to the renewal
// job, which makes the subscriptions folders should have.
func TestSyncLeavesWhatOutlastsTheBudgetToTheRenewalJob(t *testing.T) {
	e := newEnv(t)
	c, _ := e.channel(t, customerA, m365(true), "inbox")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // under 35s + 15s
	defer cancel()
	out, err := e.svc.SyncChannel(ctx, customerA, c.ID)
	if err != nil || out[0].Outcome != mail.OutcomeFailed || !strings.Contains(out[0].Error, "renewal job") || e.prov.count("create", "") != 0 {
		t.Fatalf("%+v %v; %d creates", out, err, e.prov.count("create", ""))
	}
	ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := e.svc.SyncChannel(ctx, customerA, c.ID); err != nil || out[0].Outcome != mail.OutcomeSubscribed {
		t.Fatalf("%+v %v", out, err)
	}
}

// Graph's paths and subscription resources take a user's id or
// userPrincipalName; a channel whose address is an alias (or a primary SMTP
// address other than the UPN) is resolved once (GET /users/{address}, then
// by proxyAddresses), the id stored and named in the resource, and resolved
// again when the channel's address changes.
func TestMailboxAddressResolvedToTheUserID(t *testing.T) {
	g := newGraphEnv(t, 5*time.Second)
	ctx := context.Background()
	const upn = "agent@contoso.com"
	in := m365(true)
	g.fake.AddAlias(upn, in.EmailAddress)
	c, fs := g.channel(t, customerA, in, "inbox")
	userID := g.fake.UserID(tenantA, upn)

	out, err := g.svc.SyncChannel(ctx, customerA, c.ID)
	if err != nil || out[0].Outcome != mail.OutcomeSubscribed {
		t.Fatalf("subscribe a mailbox addressed by an alias: %+v %v", out, err)
	}
	subs := g.fake.Subscriptions()
	if len(subs) != 1 || subs[0].ID != g.row(t, fs[0].ID).SubscriptionID || subs[0].UserID != userID ||
		!strings.Contains(subs[0].Resource, "/users/"+userID+"/") {
		t.Fatalf("subscription %+v, want the resource to name user %s", subs, userID)
	}
	u, err := g.store.MailboxUser(ctx, customerA, c.ID)
	if err != nil || u.ID != userID || u.Address != c.EmailAddress || u.UserPrincipalName != upn {
		t.Fatalf("stored user %+v %v", u, err)
	}

	// Resolved once: the next folder's create asks Graph for no user.
	calls := g.fake.Calls(http.MethodGet)
	if _, err := g.store.CreateFolder(ctx, customerA, c.ID, mail.FolderInput{ExternalFolderID: "f2", AutoRetrieveEmails: true}); err != nil {
		t.Fatal(err)
	}
	if out, err := g.svc.SyncChannel(ctx, customerA, c.ID); err != nil || out[1].Outcome != mail.OutcomeSubscribed {
		t.Fatalf("second folder: %+v %v", out, err)
	}
	if n := g.fake.Calls(http.MethodGet) - calls; n != 0 {
		t.Fatalf("%d GETs for a resolved mailbox", n)
	}

	// Another address: resolved again (a UPN, found directly).
	in.EmailAddress = upn
	if _, err := g.store.UpdateChannel(ctx, customerA, c.ID, in); err != nil {
		t.Fatal(err)
	}
	g.clock.Advance(time.Minute)
	if out, err := g.svc.SyncChannel(ctx, customerA, c.ID); err != nil || out[0].Outcome != mail.OutcomeSubscribed {
		t.Fatalf("after the address changed: %+v %v", out, err)
	}
	if u, err := g.store.MailboxUser(ctx, customerA, c.ID); err != nil || u.Address != upn || u.ID != userID {
		t.Fatalf("stored user after the address changed %+v %v", u, err)
	}
}

// Concurrent toggles of one channel: the mailbox's user is resolved and
// stored under a folder's lock, which must not wait for the channel row a
// toggle holds while it waits for that folder.
func TestConcurrentTogglesResolvingTheMailbox(t *testing.T) {
	e := newEnv(t)
	c, fs := e.channel(t, customerA, m365(false), "inbox", "f2")
	e.prov.latency = 20 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a request's budget
	defer cancel()
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := e.svc.Subscribe(ctx, customerA, c.ID)
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the toggles waited for each other until the deadline")
	}
	for _, f := range fs {
		if e.row(t, f.ID).SubscriptionID == "" {
			t.Errorf("folder %s has no subscription", f.ExternalFolderID)
		}
	}
}
