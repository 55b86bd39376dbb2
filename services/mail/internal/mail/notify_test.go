package mail_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/clocktest"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/natstest"
	pgpkg "supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/services/mail/internal/mail"
	"supportplatform.dev/services/mail/internal/postgres"
	"supportplatform.dev/services/mail/internal/queue"
	"supportplatform.dev/services/mail/internal/seed"
)

// nt0 starts a coalescing bucket.
var nt0 = time.Unix(1741064768, 0).UTC().Truncate(contracts.MailImportBucket)

// countingStore counts the database calls of the notification path.
type countingStore struct {
	*postgres.Store
	bySubscription, byMailbox, marks atomic.Int64
}

func (s *countingStore) TargetBySubscription(ctx context.Context, id string) (mail.Target, error) {
	s.bySubscription.Add(1)
	return s.Store.TargetBySubscription(ctx, id)
}

func (s *countingStore) TargetsByMailbox(ctx context.Context, mailbox, folder string) ([]mail.Target, error) {
	s.byMailbox.Add(1)
	return s.Store.TargetsByMailbox(ctx, mailbox, folder)
}

func (s *countingStore) MarkNotified(ctx context.Context, folderID int64, at time.Time) error {
	s.marks.Add(1)
	return s.Store.MarkNotified(ctx, folderID, at)
}

// fakeQueue records imports; with fail set it refuses them.
type fakeQueue struct {
	mu    sync.Mutex
	reqs  []contracts.MailImportRequest
	calls int
	fail  error
}

func (q *fakeQueue) Import(_ context.Context, r contracts.MailImportRequest) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls++
	if q.fail != nil {
		return q.fail
	}
	q.reqs = append(q.reqs, r)
	return nil
}

func (q *fakeQueue) requests() []contracts.MailImportRequest {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]contracts.MailImportRequest(nil), q.reqs...)
}

func (q *fakeQueue) setFail(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.fail = err
}

// countingQueue counts what reaches a real queue.
type countingQueue struct {
	q     mail.ImportQueue
	calls atomic.Int64
}

func (c *countingQueue) Import(ctx context.Context, r contracts.MailImportRequest) error {
	c.calls.Add(1)
	return c.q.Import(ctx, r)
}

type notifyEnv struct {
	store *countingStore
	pool  *pgxpool.Pool
	clock *clocktest.Clock
	reg   *prometheus.Registry
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newNotifyEnv(t *testing.T) *notifyEnv {
	t.Helper()
	pool, err := pgpkg.Open(context.Background(), pgpkg.Options{URL: pgtest.NewDatabase(t), Schema: postgres.Schema,
		Migrations: postgres.Migrations()}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	c := clocktest.New(nt0)
	return &notifyEnv{store: &countingStore{Store: postgres.New(pool, c.Now)}, pool: pool, clock: c, reg: prometheus.NewRegistry()}
}

func (e *notifyEnv) notifier(t *testing.T, q mail.ImportQueue, o mail.NotifierOptions) *mail.Notifier {
	t.Helper()
	n := mail.NewNotifier(e.store, q, e.clock.Now, quiet, e.reg, o)
	t.Cleanup(n.Close)
	return n
}

// folder creates a microsoft365 channel with one folder, switched as given,
// and stores a subscription on the folder.
func (e *notifyEnv) folder(t *testing.T, customerID int64, address, externalID string, channelOn, folderOn bool, subID, clientState string) mail.Folder {
	t.Helper()
	return e.providerFolder(t, mail.ProviderMicrosoft365, customerID, address, externalID, channelOn, folderOn, subID, clientState)
}

// providerFolder is folder with the channel's provider: a mailbox is
// unique among the live microsoft365 channels of all customers, so a second
// customer's channel on it has no provider (as the upgrade leaves them).
func (e *notifyEnv) providerFolder(t *testing.T, provider string, customerID int64, address, externalID string, channelOn, folderOn bool, subID, clientState string) mail.Folder {
	t.Helper()
	ctx := context.Background()
	tenant := ""
	if provider == mail.ProviderMicrosoft365 {
		tenant = fmt.Sprintf("c%d.contoso.onmicrosoft.com", customerID)
		seed.ConnectTenant(t, e.pool, customerID, tenant)
	}
	in, err := mail.ChannelInput{Name: "Support", Kind: mail.KindEmail, EmailAddress: address, Provider: provider,
		ProviderTenantID: tenant, AutoRetrieveEmails: channelOn,
		Folders: []mail.FolderInput{{ExternalFolderID: externalID, DisplayName: externalID, AutoRetrieveEmails: folderOn}}}.Normalize(true)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := e.store.CreateChannel(ctx, customerID, in)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := e.store.AllFolders(ctx, customerID, ch.ID)
	if err != nil {
		t.Fatal(err)
	}
	if subID != "" {
		e.subscribe(t, fs[0].ID, subID, clientState)
	}
	return fs[0]
}

// pending creates a folder whose subscription create is in flight with
// clientState: stored before the create call, no subscription id yet.
func (e *notifyEnv) pending(t *testing.T, customerID int64, address, clientState string) mail.Folder {
	t.Helper()
	f := e.folder(t, customerID, address, "inbox", true, true, "", "")
	if err := e.store.SavePending(context.Background(), customerID, f.ID, clientState); err != nil {
		t.Fatal(err)
	}
	return f
}

func (e *notifyEnv) subscribe(t *testing.T, folderID int64, subID, clientState string) {
	t.Helper()
	if _, err := e.pool.Exec(context.Background(), `UPDATE channel_folders SET provider_subscription_id = $2,
		client_state = nullif($3, ''), provider_subscription_expiration = $4 WHERE folder_id = $1`,
		folderID, subID, clientState, nt0.Add(72*time.Hour)); err != nil {
		t.Fatal(err)
	}
}

type row struct {
	sub, state  *string
	renew, last *time.Time
}

func (e *notifyEnv) row(t *testing.T, folderID int64) row {
	t.Helper()
	var r row
	if err := e.pool.QueryRow(context.Background(), `SELECT provider_subscription_id, client_state, renew_requested_at,
		last_notification_at FROM channel_folders WHERE folder_id = $1`, folderID).Scan(&r.sub, &r.state, &r.renew, &r.last); err != nil {
		t.Fatal(err)
	}
	return r
}

// counter reads a counter of the registry (labels as name=value pairs).
func counter(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func note(subID, clientState string) mail.Notification {
	return mail.Notification{SubscriptionID: subID, ClientState: clientState, ChangeType: "created",
		Resource: "Users/9f4a2c1e-3b5d-4e6f-8a7b-0c1d2e3f4a5b/Messages/AAMkAGUAAA=", ResourceID: "AAMkAGUAAA="}
}

func many(n int, it mail.Notification) []mail.Notification {
	out := make([]mail.Notification, n)
	for i := range out {
		out[i] = it
	}
	return out
}

func TestNotifyRetrievalSwitches(t *testing.T) {
	tests := []struct {
		name                string
		channelOn, folderOn bool
		queued              bool
	}{
		{"both on", true, true, true},
		{"channel off", false, true, false},
		{"folder off", true, false, false},
		{"both off", false, false, false},
	}
	e := newNotifyEnv(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &fakeQueue{}
			n := e.notifier(t, q, mail.NotifierOptions{})
			sub := "sub-" + strconv.Itoa(i)
			f := e.folder(t, int64(10+i), fmt.Sprintf("s%d@contoso.com", i), "inbox", tt.channelOn, tt.folderOn, sub, "secret")
			res, err := n.Notify(context.Background(), []mail.Notification{note(sub, "secret")})
			if err != nil {
				t.Fatal(err)
			}
			reqs := q.requests()
			if tt.queued {
				want := contracts.MailImportRequest{CustomerID: int64(10 + i), ChannelID: f.ChannelID, FolderID: f.ID,
					Reason: contracts.ImportNotification, RequestedAt: nt0}
				if res.Queued != 1 || len(reqs) != 1 || reqs[0] != want {
					t.Fatalf("result %+v, imports %+v; want %+v", res, reqs, want)
				}
			} else if res.Dropped != 1 || len(reqs) != 0 {
				t.Fatalf("result %+v, imports %+v; want dropped", res, reqs)
			}
			// The notification is recorded on the folder either way.
			if r := e.row(t, f.ID); r.last == nil || !r.last.Equal(nt0) {
				t.Errorf("last notification = %v", r.last)
			}
		})
	}
	if got := counter(t, e.reg, "mail_notifications_dropped_total", "reason", mail.DropRetrievalOff); got != 3 {
		t.Errorf("dropped retrieval-off = %v, want 3", got)
	}
	if got := counter(t, e.reg, "mail_notifications_received_total"); got != 4 {
		t.Errorf("received = %v, want 4", got)
	}
}

func TestNotifyClientState(t *testing.T) {
	tests := []struct {
		name   string
		stored string
		sent   string
		queued bool
	}{
		{"matches", "s3cret-state", "s3cret-state", true},
		{"wrong", "s3cret-state", "s3cret-statf", false},
		{"prefix only", "s3cret-state", "s3cret", false},
		{"case differs", "s3cret-state", "S3CRET-STATE", false},
		{"none sent", "s3cret-state", "", false},
		{"none stored", "", "", false},
		{"none stored, one sent", "", "anything", false},
	}
	e := newNotifyEnv(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &fakeQueue{}
			n := e.notifier(t, q, mail.NotifierOptions{})
			sub := "cs-" + strconv.Itoa(i)
			e.folder(t, int64(i+1), fmt.Sprintf("c%d@contoso.com", i), "inbox", true, true, sub, tt.stored)
			res, err := n.Notify(context.Background(), []mail.Notification{note(sub, tt.sent)})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(q.requests()) == 1; got != tt.queued || res.Received != 1 || (tt.queued && res.Queued != 1) || (!tt.queued && res.Dropped != 1) {
				t.Fatalf("result %+v, imports %d; want queued %v", res, len(q.requests()), tt.queued)
			}
		})
	}
	if got := counter(t, e.reg, "mail_notifications_dropped_total", "reason", mail.DropForged); got != 6 {
		t.Errorf("dropped forged = %v, want 6", got)
	}
}

func TestNotifyUnknownIDLooksUpOnce(t *testing.T) {
	e := newNotifyEnv(t)
	q := &fakeQueue{}
	n := e.notifier(t, q, mail.NotifierOptions{})
	e.pending(t, 1, "p@contoso.com", "secret")
	ctx := context.Background()
	for range 5 {
		res, err := n.Notify(ctx, many(200, note("not-stored-yet", "secret")))
		if err != nil {
			t.Fatal(err)
		}
		if res.Parked != 200 {
			t.Fatalf("result %+v, want 200 parked", res)
		}
	}
	if got := e.store.bySubscription.Load(); got != 1 {
		t.Errorf("subscription lookups = %d, want 1 (negative cache)", got)
	}
	if got := n.Parked(); got != 1 {
		t.Errorf("parked items held = %d, want 1 (repeats share one)", got)
	}
	// After the negative TTL the id is looked up again.
	e.clock.Advance(11 * time.Second)
	if _, err := n.Notify(ctx, []mail.Notification{note("not-stored-yet", "secret")}); err != nil {
		t.Fatal(err)
	}
	if got := e.store.bySubscription.Load(); got != 2 {
		t.Errorf("subscription lookups after the negative TTL = %d, want 2", got)
	}
}

func TestNotifyForgedFloodIsBounded(t *testing.T) {
	e := newNotifyEnv(t)
	q := &fakeQueue{}
	n := e.notifier(t, q, mail.NotifierOptions{UnknownLookupRate: 1, UnknownLookupBurst: 20, ParkSize: 100})
	f := e.folder(t, 1, "support@contoso.com", "inbox", true, true, "real-sub", "secret")
	// The known id was seen before; its cache entry has expired by the
	// time of the flood.
	if _, err := n.Notify(context.Background(), []mail.Notification{note("real-sub", "secret")}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	items := make([]mail.Notification, 1000)
	for i := range items {
		items[i] = note(randid.Hex(16), randid.Hex(8))
	}
	// The known id keeps working in the middle of the flood, from its
	// stale entry, although the lookup budget is spent.
	items[500] = note("real-sub", "secret")
	res, err := n.Notify(context.Background(), items)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.store.bySubscription.Load(); got > 21 {
		t.Errorf("subscription lookups = %d, want at most the burst (20) and the known id's first", got)
	}
	if res.Queued != 1 || res.Parked > 100 || res.Dropped < 899 || res.Received != 1000 {
		t.Errorf("result %+v", res)
	}
	if reqs := q.requests(); len(reqs) != 2 || reqs[1].FolderID != f.ID {
		t.Errorf("imports %+v", reqs)
	}
	if got := counter(t, e.reg, "mail_notifications_dropped_total", "reason", mail.DropUnknown); got != float64(res.Dropped) {
		t.Errorf("dropped unknown = %v, want %d", got, res.Dropped)
	}
}

func TestNotifyInvalidItems(t *testing.T) {
	e := newNotifyEnv(t)
	q := &fakeQueue{}
	n := e.notifier(t, q, mail.NotifierOptions{})
	tests := []struct {
		name   string
		item   mail.Notification
		reason string
	}{
		{"no id and a message resource", mail.Notification{Resource: "Users/x/Messages/y"}, mail.DropUnparseable},
		{"no id, no resource", mail.Notification{}, mail.DropUnparseable},
		{"id too long", mail.Notification{SubscriptionID: string(make([]byte, 37))}, mail.DropMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := n.Notify(context.Background(), []mail.Notification{tt.item})
			if err != nil {
				t.Fatal(err)
			}
			if res.Dropped != 1 {
				t.Fatalf("result %+v", res)
			}
		})
	}
	if got := e.store.bySubscription.Load(); got != 0 {
		t.Errorf("lookups = %d, want none", got)
	}
	if got := counter(t, e.reg, "mail_notifications_dropped_total", "reason", mail.DropUnparseable); got != 2 {
		t.Errorf("dropped unparseable = %v", got)
	}
}

func TestNotifyResourceFallback(t *testing.T) {
	e := newNotifyEnv(t)
	q := &fakeQueue{}
	n := e.notifier(t, q, mail.NotifierOptions{})
	a := e.folder(t, 1, "shared@contoso.com", "AAMk=", true, true, "sub-a", "state-a")
	b := e.providerFolder(t, mail.ProviderNone, 2, "shared@contoso.com", "AAMk=", true, true, "sub-b", "state-b")
	e.pending(t, 3, "pending@contoso.com", "state-p")
	tests := []struct {
		name     string
		resource string
		state    string
		want     int64 // the folder imported; 0: none
		reason   string
	}{
		{"second customer by client state", "users/Shared@contoso.com/mailFolders('AAMk=')/messages", "state-b", b.ID, ""},
		{"first customer, path form", "/Users/shared%40contoso.com/MailFolders/AAMk=/Messages", "state-a", a.ID, ""},
		{"neither client state", "users/shared@contoso.com/mailFolders('AAMk=')/messages", "state-c", 0, mail.DropForged},
		{"other folder id, no create in flight", "users/shared@contoso.com/mailFolders('inbox')/messages", "state-a", 0, mail.DropUnknown},
		{"other folder id, create in flight", "users/shared@contoso.com/mailFolders('inbox')/messages", "state-p", 0, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(q.requests())
			it := mail.Notification{SubscriptionID: "unknown-" + strconv.Itoa(i), ClientState: tt.state, Resource: tt.resource}
			res, err := n.Notify(context.Background(), []mail.Notification{it})
			if err != nil {
				t.Fatal(err)
			}
			reqs := q.requests()[before:]
			switch {
			case tt.want != 0:
				if len(reqs) != 1 || reqs[0].FolderID != tt.want || res.Queued != 1 {
					t.Fatalf("result %+v, imports %+v; want folder %d", res, reqs, tt.want)
				}
			case tt.reason != "":
				if len(reqs) != 0 || res.Dropped != 1 {
					t.Fatalf("result %+v, imports %+v; want dropped", res, reqs)
				}
			default: // not found by either: parked
				if len(reqs) != 0 || res.Parked != 1 {
					t.Fatalf("result %+v, imports %+v; want parked", res, reqs)
				}
			}
		})
	}
}

func TestNotifyLifecycle(t *testing.T) {
	tests := []struct {
		name      string
		event     string
		on        bool
		import_   string // the reason of the import queued; "" none
		renew     bool
		cleared   bool
		dropped   string
		resultSum func(mail.NotifyResult) bool
	}{
		{name: "reauthorization required", event: mail.LifecycleReauthorizationRequired, on: true, renew: true,
			resultSum: func(r mail.NotifyResult) bool { return r.Handled == 1 }},
		{name: "subscription removed", event: mail.LifecycleSubscriptionRemoved, on: true, renew: true, cleared: true,
			resultSum: func(r mail.NotifyResult) bool { return r.Handled == 1 }},
		{name: "missed", event: mail.LifecycleMissed, on: true, import_: contracts.ImportMissed,
			resultSum: func(r mail.NotifyResult) bool { return r.Queued == 1 }},
		{name: "missed, retrieval off", event: mail.LifecycleMissed, on: false, dropped: mail.DropRetrievalOff,
			resultSum: func(r mail.NotifyResult) bool { return r.Dropped == 1 }},
		{name: "unknown event", event: "somethingNew", on: true, dropped: mail.DropUnknownLifecycle,
			resultSum: func(r mail.NotifyResult) bool { return r.Dropped == 1 }},
	}
	e := newNotifyEnv(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &fakeQueue{}
			n := e.notifier(t, q, mail.NotifierOptions{})
			sub := "lc-" + strconv.Itoa(i)
			f := e.folder(t, int64(i+1), fmt.Sprintf("l%d@contoso.com", i), "inbox", tt.on, tt.on, sub, "secret")
			it := mail.Notification{SubscriptionID: sub, ClientState: "secret", LifecycleEvent: tt.event}
			res, err := n.Notify(context.Background(), []mail.Notification{it})
			if err != nil {
				t.Fatal(err)
			}
			if !tt.resultSum(res) {
				t.Errorf("result %+v", res)
			}
			reqs := q.requests()
			if tt.import_ != "" && (len(reqs) != 1 || reqs[0].Reason != tt.import_ || reqs[0].FolderID != f.ID) {
				t.Errorf("imports %+v, want one %s", reqs, tt.import_)
			}
			if tt.import_ == "" && len(reqs) != 0 {
				t.Errorf("imports %+v, want none", reqs)
			}
			r := e.row(t, f.ID)
			if got := r.renew != nil && r.renew.Equal(nt0); got != tt.renew {
				t.Errorf("renew requested at %v, want %v", r.renew, tt.renew)
			}
			if got := r.sub == nil && r.state == nil; got != tt.cleared {
				t.Errorf("subscription %v cleared = %v, want %v", r.sub, got, tt.cleared)
			}
			if r.last != nil {
				t.Errorf("a lifecycle event recorded a notification time")
			}
			if tt.dropped != "" && counter(t, e.reg, "mail_notifications_dropped_total", "reason", tt.dropped) < 1 {
				t.Errorf("no %s drop counted", tt.dropped)
			}
			if tt.cleared {
				// The removed id is unknown from now on (not served from the
				// cache), and with no create in flight its items are not parked.
				res, err := n.Notify(context.Background(), []mail.Notification{note(sub, "secret")})
				if err != nil || res.Dropped != 1 {
					t.Errorf("after removal: %+v, %v; want dropped", res, err)
				}
			}
		})
	}
	// A forged lifecycle event changes nothing.
	q := &fakeQueue{}
	n := e.notifier(t, q, mail.NotifierOptions{})
	f := e.folder(t, 99, "forged@contoso.com", "inbox", true, true, "lc-forged", "secret")
	res, err := n.Notify(context.Background(), []mail.Notification{{SubscriptionID: "lc-forged", ClientState: "guess",
		LifecycleEvent: mail.LifecycleSubscriptionRemoved}})
	if err != nil || res.Dropped != 1 {
		t.Fatalf("forged lifecycle: %+v, %v", res, err)
	}
	if r := e.row(t, f.ID); r.sub == nil || r.renew != nil {
		t.Errorf("forged lifecycle changed the folder: %+v", r)
	}
}

// waitFor polls cond (the park runs on a real ticker) for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func runNotifier(t *testing.T, n *mail.Notifier) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
}

func TestNotifyParkedQueuedOnceStored(t *testing.T) {
	e := newNotifyEnv(t)
	q := &fakeQueue{}
	// Each park round reads the clock first: rounds are counted there.
	var reads atomic.Int64
	now := func() time.Time { reads.Add(1); return e.clock.Now() }
	n := mail.NewNotifier(e.store, q, now, quiet, e.reg, mail.NotifierOptions{ParkTick: 5 * time.Millisecond})
	t.Cleanup(n.Close)
	runNotifier(t, n)
	f := e.pending(t, 1, "support@contoso.com", "secret")
	res, err := n.Notify(context.Background(), many(3, note("in-flight", "secret")))
	if err != nil || res.Parked != 3 {
		t.Fatalf("result %+v, %v; want parked", res, err)
	}
	// The create call returns and the id is stored; the first retry is due
	// a second later. Rounds run one after another: once a second round
	// after the store has begun, a whole round has seen the stored id.
	e.subscribe(t, f.ID, "in-flight", "secret")
	stored := reads.Load()
	waitFor(t, "a whole park round", func() bool { return reads.Load() >= stored+2 })
	if len(q.requests()) != 0 {
		t.Fatal("retried before its time")
	}
	e.clock.Advance(time.Second)
	waitFor(t, "the parked import", func() bool { return len(q.requests()) == 1 })
	waitFor(t, "the park to empty", func() bool { return n.Parked() == 0 })
	if b := n.ParkedBytes(); b != 0 {
		t.Errorf("the empty park counts %d bytes", b)
	}
	if r := q.requests()[0]; r.FolderID != f.ID || r.Reason != contracts.ImportNotification {
		t.Errorf("import %+v", r)
	}
	if got := counter(t, e.reg, "mail_notifications_queued_total"); got != 3 {
		t.Errorf("queued = %v, want 3 (the parked repeats count)", got)
	}
}

func TestNotifyParkedDroppedAfterItsTime(t *testing.T) {
	e := newNotifyEnv(t)
	q := &fakeQueue{}
	n := e.notifier(t, q, mail.NotifierOptions{ParkTick: 5 * time.Millisecond})
	runNotifier(t, n)
	e.pending(t, 1, "support@contoso.com", "secret")
	if res, err := n.Notify(context.Background(), many(2, note("never-stored", "secret"))); err != nil || res.Parked != 2 {
		t.Fatalf("result %+v, %v", res, err)
	}
	// Retries with backoff: each round looks the id up once more.
	for range 5 {
		before := e.store.bySubscription.Load()
		e.clock.Advance(30 * time.Second)
		waitFor(t, "a retry", func() bool { return e.store.bySubscription.Load() > before })
	}
	if n.Parked() != 1 {
		t.Fatalf("parked = %d, want 1 before its time", n.Parked())
	}
	e.clock.Advance(31 * time.Second) // 3 min and 1 s after it was parked
	waitFor(t, "the park to empty", func() bool { return n.Parked() == 0 })
	if b := n.ParkedBytes(); b != 0 {
		t.Errorf("the empty park counts %d bytes", b)
	}
	if got := counter(t, e.reg, "mail_notifications_dropped_total", "reason", mail.DropParkedExpired); got != 2 {
		t.Errorf("dropped parked-expired = %v, want 2", got)
	}
	if len(q.requests()) != 0 {
		t.Errorf("imports %+v", q.requests())
	}
}

func TestNotifyRunStops(t *testing.T) {
	e := newNotifyEnv(t)
	n := mail.NewNotifier(e.store, &fakeQueue{}, e.clock.Now, quiet, nil, mail.NotifierOptions{ParkTick: time.Millisecond})
	done := make(chan struct{})
	go func() { n.Run(context.Background()); close(done) }()
	time.Sleep(10 * time.Millisecond)
	closed := make(chan struct{})
	go func() { n.Close(); close(closed) }()
	for _, ch := range []chan struct{}{done, closed} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not stop Run")
		}
	}
}

func TestNotifyCoalescesIntoJetStream(t *testing.T) {
	e := newNotifyEnv(t)
	ctx := context.Background()
	names := contracts.Names{Prefix: "t" + randid.Hex(6)}
	bus, err := natsbus.Connect(natstest.Start(t), "mailingest-test", names, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	real, err := queue.New(ctx, bus)
	if err != nil {
		t.Fatal(err)
	}
	q := &countingQueue{q: real}
	n := e.notifier(t, q, mail.NotifierOptions{SubscriptionBurst: 20000})
	f := e.folder(t, 1, "busy@contoso.com", "inbox", true, true, "busy", "secret")

	burst := func() {
		var wg sync.WaitGroup
		var failed atomic.Int64
		var queued atomic.Int64
		for range 10 {
			wg.Go(func() {
				for range 5 {
					res, err := n.Notify(ctx, many(100, note("busy", "secret")))
					if err != nil {
						failed.Add(1)
					}
					queued.Add(int64(res.Queued))
				}
			})
		}
		wg.Wait()
		if failed.Load() != 0 || queued.Load() != 5000 {
			t.Fatalf("failed %d, queued %d; want 0, 5000", failed.Load(), queued.Load())
		}
	}
	burst()
	e.clock.Advance(contracts.MailImportBucket)
	burst()

	if got := q.calls.Load(); got != 2 {
		t.Errorf("publishes = %d, want 2 (one per bucket)", got)
	}
	st, err := bus.JS.Stream(ctx, names.Stream(contracts.StreamMailImport))
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs < 1 || info.State.Msgs > 2 {
		t.Errorf("stream holds %d messages, want 2", info.State.Msgs)
	}
	if got := e.store.marks.Load(); got != 2 {
		t.Errorf("MarkNotified calls = %d, want 2 (one per bucket)", got)
	}
	if r := e.row(t, f.ID); r.last == nil || !r.last.Equal(nt0.Add(contracts.MailImportBucket)) {
		t.Errorf("last notification = %v", r.last)
	}
	if got := counter(t, e.reg, "mail_notifications_queued_total"); got != 10000 {
		t.Errorf("queued counter = %v", got)
	}
}

func TestNotifyQueueFailure(t *testing.T) {
	e := newNotifyEnv(t)
	q := &fakeQueue{}
	n := e.notifier(t, q, mail.NotifierOptions{})
	e.folder(t, 1, "support@contoso.com", "inbox", true, true, "sub", "secret")
	q.setFail(errors.New("nats: no responders available for request"))
	_, err := n.Notify(context.Background(), many(10, note("sub", "secret")))
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code != apperr.Unavailable || ae.RetryAfterSeconds != 1 {
		t.Fatalf("error = %v, want unavailable with Retry-After: 1", err)
	}
	// Nothing was recorded: the provider's retry in the same bucket publishes.
	q.setFail(nil)
	res, err := n.Notify(context.Background(), many(10, note("sub", "secret")))
	if err != nil || res.Queued != 10 {
		t.Fatalf("retry: %+v, %v", res, err)
	}
	if len(q.requests()) != 1 {
		t.Errorf("imports %+v, want one", q.requests())
	}
}

func TestNotifyRateLimitPerSubscription(t *testing.T) {
	e := newNotifyEnv(t)
	q := &fakeQueue{}
	n := e.notifier(t, q, mail.NotifierOptions{SubscriptionRate: 1, SubscriptionBurst: 5})
	e.folder(t, 1, "a@contoso.com", "inbox", true, true, "sub-a", "secret")
	e.folder(t, 2, "b@contoso.com", "inbox", true, true, "sub-b", "secret")
	items := append(many(10, note("sub-a", "secret")), many(3, note("sub-b", "secret"))...)
	res, err := n.Notify(context.Background(), items)
	if err != nil {
		t.Fatal(err)
	}
	if res.Queued != 8 || res.Dropped != 5 {
		t.Errorf("result %+v, want 8 queued (5 of a, 3 of b), 5 dropped", res)
	}
	if got := counter(t, e.reg, "mail_notifications_dropped_total", "reason", mail.DropRateLimited); got != 5 {
		t.Errorf("dropped rate-limited = %v", got)
	}
	e.clock.Advance(2 * time.Second) // two tokens back
	res, err = n.Notify(context.Background(), many(3, note("sub-a", "secret")))
	if err != nil || res.Queued != 2 || res.Dropped != 1 {
		t.Errorf("after 2 s: %+v, %v", res, err)
	}
}

func TestNotifyContextEnded(t *testing.T) {
	e := newNotifyEnv(t)
	n := e.notifier(t, &fakeQueue{}, mail.NotifierOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var ae *apperr.Error
	if _, err := n.Notify(ctx, many(2, note("x", "y"))); !errors.As(err, &ae) || ae.Code != apperr.Unavailable || ae.RetryAfterSeconds != 1 {
		t.Fatalf("error = %v, want unavailable with Retry-After: 1", err)
	}
}

// The per-subscription limit, the single lookup of an unknown id and the
// lookup budget hold when the notifications arrive in parallel requests.
func TestNotifyLimitsUnderParallelRequests(t *testing.T) {
	parallel := func(n int, fn func(i int) mail.NotifyResult) (total mail.NotifyResult) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				r := fn(i)
				mu.Lock()
				total.Queued += r.Queued
				total.Dropped += r.Dropped
				total.Parked += r.Parked
				mu.Unlock()
			})
		}
		wg.Wait()
		return total
	}
	notify := func(t *testing.T, n *mail.Notifier, items ...mail.Notification) mail.NotifyResult {
		res, err := n.Notify(context.Background(), items)
		if err != nil {
			t.Error(err)
		}
		return res
	}
	t.Run("rate limit per subscription", func(t *testing.T) {
		e := newNotifyEnv(t)
		n := e.notifier(t, &fakeQueue{}, mail.NotifierOptions{SubscriptionRate: 1, SubscriptionBurst: 5})
		e.folder(t, 1, "a@contoso.com", "inbox", true, true, "sub-a", "secret")
		res := parallel(20, func(int) mail.NotifyResult { return notify(t, n, note("sub-a", "secret")) })
		if res.Queued != 5 || res.Dropped != 15 {
			t.Fatalf("%+v, want 5 queued and 15 dropped", res)
		}
	})
	t.Run("an unknown id is looked up once", func(t *testing.T) {
		e := newNotifyEnv(t)
		n := e.notifier(t, &fakeQueue{}, mail.NotifierOptions{})
		e.pending(t, 1, "p@contoso.com", "secret")
		res := parallel(50, func(int) mail.NotifyResult { return notify(t, n, note("not-stored-yet", "secret")) })
		if got := e.store.bySubscription.Load(); got != 1 || res.Parked != 50 {
			t.Fatalf("%d lookups, %+v; want 1 lookup and 50 parked", got, res)
		}
	})
	t.Run("forged ids stay within the lookup budget", func(t *testing.T) {
		e := newNotifyEnv(t)
		n := e.notifier(t, &fakeQueue{}, mail.NotifierOptions{UnknownLookupRate: 1, UnknownLookupBurst: 20, ParkSize: 100})
		parallel(200, func(int) mail.NotifyResult { return notify(t, n, note(randid.Hex(16), randid.Hex(8))) })
		if got := e.store.bySubscription.Load(); got > 20 {
			t.Fatalf("%d lookups for 200 forged ids, want at most the burst of 20", got)
		}
	})
}
