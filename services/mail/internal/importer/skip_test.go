package importer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"supportplatform.dev/pkg/clocktest"
	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/services/mail/internal/graph"
	"supportplatform.dev/services/mail/internal/importer"
	"supportplatform.dev/services/mail/internal/mail"
	"supportplatform.dev/services/mail/internal/postgres"
)

// realGraph is the production client against the fake Graph, behind a
// server that can answer chosen message reads with a status instead.
type realGraph struct {
	fake   *graphfake.Server
	client *graph.Client
	mu     sync.Mutex
	fail   map[string]int // message id -> status
}

func newRealGraph(t *testing.T) *realGraph {
	t.Helper()
	g := &realGraph{fake: graphfake.New(graphfake.Options{ClientID: "app", ClientSecret: "secret"}), fail: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		var status int
		for id, st := range g.fail {
			if strings.HasSuffix(r.URL.Path, "/messages/"+id) {
				status = st
			}
		}
		g.mu.Unlock()
		if status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(`{"error":{"code":"ServiceUnavailable","message":"injected"}}`))
			return
		}
		g.fake.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := graph.New(graph.Config{ClientID: "app", ClientSecret: "secret", TokenURL: srv.URL + "/{tenant}/oauth2/v2.0/token",
		BaseURL: srv.URL + "/v1.0", HTTPClient: srv.Client(), MailRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	g.client = c
	return g
}

func (g *realGraph) add(t *testing.T, d graphfake.DeliverMail) string {
	t.Helper()
	d.Mailbox = "support@contoso.com"
	id, err := g.fake.AddMail(d)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A mail Graph's reply for which exceeds the client's 16 MiB cap can never
// be imported: it is skipped, counted on the folder and in the metric, and
// the round stores its delta link. A transient failure (503) still fails
// the round, which stores nothing, and the next round imports the rest.
func TestUnimportableMailDoesNotStopTheFolder(t *testing.T) {
	e := newEnv(t)
	tg := e.folder(t)
	g := newRealGraph(t)
	ctx := context.Background()
	from := graphfake.Address{Address: "jane@fabrikam.com"}
	before := g.add(t, graphfake.DeliverMail{Subject: "before", From: from, Text: "hello"})
	huge := g.add(t, graphfake.DeliverMail{Subject: "huge", From: from, Text: strings.Repeat("x", 17<<20)})
	flaky := g.add(t, graphfake.DeliverMail{Subject: "after", From: from, Text: "hello again"})
	g.fail[flaky] = http.StatusServiceUnavailable

	reg := prometheus.NewRegistry()
	metrics, err := importer.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	im := importer.New(importer.Options{Graph: graph.NewImportSource(g.client), Blobs: e.blobs, Publisher: e.bus, PageSize: 2,
		MessageConcurrency: 1, Metrics: metrics, Now: time.Now, Log: discard()})
	r := importer.NewRunner(importer.RunnerOptions{Store: e.store, Locker: postgres.NewImportLocks(e.pool), Importer: im,
		Metrics: metrics, Log: discard()})

	if err := r.Import(ctx, 1, tg.ChannelID, tg.FolderID); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("a round with a transient failure: %v", err)
	}
	st, err := e.store.ImportState(ctx, 1, tg.FolderID)
	if err != nil || st.DeltaLink != "" || st.LastImportError == "" {
		t.Fatalf("after the transient failure: %+v, %v", st, err)
	}
	f, err := e.store.Folder(ctx, 1, tg.ChannelID, tg.FolderID)
	if err != nil || f.SkippedMessages != 0 {
		t.Fatalf("a failed round recorded skips: %+v, %v", f, err)
	}

	g.mu.Lock()
	delete(g.fail, flaky)
	g.mu.Unlock()
	if err := r.Import(ctx, 1, tg.ChannelID, tg.FolderID); err != nil {
		t.Fatalf("the round stopped at the unimportable mail: %v", err)
	}
	st, err = e.store.ImportState(ctx, 1, tg.FolderID)
	if err != nil || st.DeltaLink == "" || st.LastImportError != "" || st.ImportedTotal != 2 {
		t.Fatalf("after the round: %+v, %v", st, err)
	}
	f, err = e.store.Folder(ctx, 1, tg.ChannelID, tg.FolderID)
	if err != nil || f.SkippedMessages != 1 || !strings.HasPrefix(f.LastSkipReason, importer.SkipSize+": message "+huge+": ") ||
		f.LastSkipAt == nil {
		t.Fatalf("folder %+v, %v", f, err)
	}
	mails, _ := e.mails(t)
	got := map[string]bool{}
	for _, m := range mails {
		got[m.ProviderMessageID] = true
	}
	if !got[before] || !got[flaky] || got[huge] {
		t.Fatalf("published %v", got)
	}
	// The metric counts every skip, the failed round's too (as published
	// counts repeats); the folder only what rounds that stored a link did.
	if n := skippedTotal(t, reg, importer.SkipSize); n != 2 {
		t.Fatalf("mail_import_messages_skipped_total{reason=too-big} = %v", n)
	}
	// The next round starts from the stored link: nothing is asked again.
	if err := r.Import(ctx, 1, tg.ChannelID, tg.FolderID); err != nil {
		t.Fatal(err)
	}
	if f, _ := e.store.Folder(ctx, 1, tg.ChannelID, tg.FolderID); f.SkippedMessages != 1 {
		t.Fatalf("the skipped mail was tried again: %+v", f)
	}
}

// skippedTotal reads mail_import_messages_skipped_total{reason}.
func skippedTotal(t *testing.T, reg *prometheus.Registry, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "mail_import_messages_skipped_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}

// Which failures of one mail skip it and which fail the round.
func TestPermanentAndTransientMailFailures(t *testing.T) {
	e := newEnv(t)
	tg := e.folder(t)
	cases := []struct {
		name   string
		err    error
		reason string // "" : the round fails
	}{
		{"refused", providerErr(importer.ErrRefused, "status 400 ErrorInvalidIdMalformed"), importer.SkipRefused},
		{"reply over the cap", providerErr(importer.ErrReplyTooLarge, "reply over the cap"), importer.SkipSize},
		{"malformed reply", providerErr(importer.ErrMalformedReply, "malformed reply"), importer.SkipUndecodable},
		{"unclassed (throttled, token, rights, server)", errServer(http.StatusTooManyRequests), ""},
		{"network", context.DeadlineExceeded, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newFakeGraph()
			for i := range 3 {
				g.add(mailFrom(i, "jane@fabrikam.com"))
			}
			g.failing["AAMkId-01"] = c.err
			res, err := e.importer(g, clocktest.New(start).Now).Round(context.Background(), tg, nil)
			if c.reason == "" {
				if err == nil {
					t.Fatalf("the round succeeded: %+v", res)
				}
				return
			}
			if err != nil || res.Published != 2 || len(res.Unimportable) != 1 || res.Unimportable[0].Reason != c.reason ||
				res.Unimportable[0].MessageID != "AAMkId-01" || res.DeltaLink == "" {
				t.Fatalf("%+v, %v", res, err)
			}
		})
	}
}

// A channel addressed by an alias: Graph refuses the alias in paths (404
// ErrorInvalidUser), so the import names the mailbox by the user id
// resolved for the channel's address.
func TestImportNamesTheMailboxByItsUserID(t *testing.T) {
	e := newEnv(t)
	tg := e.folder(t) // support@contoso.com
	g := newRealGraph(t)
	ctx := context.Background()
	g.fake.AddAlias("agent@contoso.com", "support@contoso.com")
	id := g.add(t, graphfake.DeliverMail{Subject: "to the alias", From: graphfake.Address{Address: "jane@fabrikam.com"}, Text: "hi"})
	im := importer.New(importer.Options{Graph: graph.NewImportSource(g.client), Blobs: e.blobs, Publisher: e.bus, Now: time.Now, Log: discard()})
	r := importer.NewRunner(importer.RunnerOptions{Store: e.store, Locker: postgres.NewImportLocks(e.pool), Importer: im, Log: discard()})

	// Before the address is resolved, paths name it: Graph refuses.
	if err := r.Import(ctx, 1, tg.ChannelID, tg.FolderID); err == nil || !strings.Contains(err.Error(), "ErrorInvalidUser") {
		t.Fatalf("import by the alias: %v", err)
	}
	u, err := g.client.ResolveUser(ctx, tg.TenantID, tg.Mailbox)
	if err != nil || u.ID != g.fake.UserID(tg.TenantID, "agent@contoso.com") || u.UserPrincipalName != "agent@contoso.com" {
		t.Fatalf("resolve the alias: %+v %v", u, err)
	}
	if err := e.store.SaveMailboxUser(ctx, 1, tg.ChannelID, mail.MailboxUser{Address: tg.Mailbox, ID: u.ID, UserPrincipalName: u.UserPrincipalName}); err != nil {
		t.Fatal(err)
	}
	if err := r.Import(ctx, 1, tg.ChannelID, tg.FolderID); err != nil {
		t.Fatalf("import by the user id: %v", err)
	}
	mails, _ := e.mails(t)
	if len(mails) != 1 || mails[0].ProviderMessageID != id || mails[0].Mailbox != "support@contoso.com" {
		t.Fatalf("published %+v", mails)
	}
	// The channel given another address: the stored id was resolved for
	// the old one and is not used.
	if _, err := e.store.UpdateChannel(ctx, 1, tg.ChannelID, mail.ChannelInput{Name: "Support", Kind: mail.KindEmail,
		EmailAddress: "other@contoso.com", Provider: mail.ProviderMicrosoft365, ProviderTenantID: tg.TenantID, AutoRetrieveEmails: true}); err != nil {
		t.Fatal(err)
	}
	if tg2, err := e.store.ImportTarget(ctx, 1, tg.ChannelID, tg.FolderID); err != nil || tg2.MailboxUserID != "" {
		t.Fatalf("target after the address changed: %+v %v", tg2, err)
	}
}
