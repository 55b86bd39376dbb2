package mail_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"supportplatform.dev/pkg/clocktest"
	"supportplatform.dev/pkg/contracts"
	pgpkg "supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/services/mail/internal/mail"
	"supportplatform.dev/services/mail/internal/postgres"
	"supportplatform.dev/services/mail/internal/seed"
)

// The service tests run on the real store and PostgreSQL with a fake
// provider: what they check (pending secrets, locks, claims) lives in both.

const (
	customerA int64 = 1
	customerB int64 = 2
	tenantA         = "11111111-2222-3333-4444-555555555555"
	tenantB         = "contoso.onmicrosoft.com"
	baseURL         = "https://support.example.com/"
	notifyURL       = "https://support.example.com/api/providerwebhook"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

type call struct{ Op, Tenant, ID string }

// fakeProvider keeps subscriptions in memory the way Graph does (every
// create gets its own id) and fails on demand.
type fakeProvider struct {
	mu    sync.Mutex
	now   func() time.Time
	seq   int
	subs  map[string]mail.ProviderSubscription
	owner map[string]string // subscription id -> tenant
	calls []call
	// fail holds the next errors of an operation ("create", "renew",
	// "delete", "list"), used up in order.
	fail map[string][]error
	// onCreate runs inside Create before the subscription exists.
	onCreate func(mail.NewProviderSubscription)
	// latency is added to every call (to make concurrent callers overlap).
	latency time.Duration
}

// grantedCut is how much shorter than asked the fake grants: the stored
// expiry must be the granted one.
const grantedCut = 17 * time.Minute

func newFakeProvider(now func() time.Time) *fakeProvider {
	return &fakeProvider{now: now, subs: map[string]mail.ProviderSubscription{}, owner: map[string]string{}, fail: map[string][]error{}}
}

func (p *fakeProvider) failNext(op string, errs ...error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fail[op] = append(p.fail[op], errs...)
}

func (p *fakeProvider) begin(op, tenant, id string) error {
	if p.latency > 0 {
		time.Sleep(p.latency)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, call{op, tenant, id})
	if errs := p.fail[op]; len(errs) > 0 {
		p.fail[op] = errs[1:]
		return errs[0]
	}
	return nil
}

// ResolveMailbox treats every address as its user's userPrincipalName, the
// id the resources then name it by.
func (p *fakeProvider) ResolveMailbox(ctx context.Context, tenant, address string) (mail.MailboxUser, error) {
	if err := p.begin("resolve", tenant, address); err != nil {
		return mail.MailboxUser{}, err
	}
	return mail.MailboxUser{Address: address, ID: address, UserPrincipalName: address}, nil
}

func (p *fakeProvider) Create(ctx context.Context, tenant string, s mail.NewProviderSubscription) (mail.ProviderSubscription, error) {
	if err := p.begin("create", tenant, s.FolderID); err != nil {
		return mail.ProviderSubscription{}, err
	}
	if p.onCreate != nil {
		p.onCreate(s)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	resource := mail.SubscriptionResource(s.Mailbox, s.FolderID)
	p.seq++
	sub := mail.ProviderSubscription{ID: fmt.Sprintf("sub-%d", p.seq), Resource: resource, NotificationURL: s.NotificationURL,
		ClientState: s.ClientState, Expiration: s.Expiration.Add(-grantedCut)}
	p.subs[sub.ID], p.owner[sub.ID] = sub, tenant
	return sub, nil
}

func (p *fakeProvider) Renew(ctx context.Context, tenant, id string, exp time.Time) (mail.ProviderSubscription, error) {
	if err := p.begin("renew", tenant, id); err != nil {
		return mail.ProviderSubscription{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	sub, ok := p.subs[id]
	if !ok || p.owner[id] != tenant {
		return mail.ProviderSubscription{}, fmt.Errorf("404 from graph: %w", mail.ErrProviderNotFound)
	}
	sub.Expiration = exp.Add(-grantedCut)
	p.subs[id] = sub
	return sub, nil
}

func (p *fakeProvider) Delete(ctx context.Context, tenant, id string) error {
	if err := p.begin("delete", tenant, id); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.subs, id)
	return nil
}

func (p *fakeProvider) List(ctx context.Context, tenant string) ([]mail.ProviderSubscription, error) {
	if err := p.begin("list", tenant, ""); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []mail.ProviderSubscription
	for id, s := range p.subs {
		if p.owner[id] == tenant {
			out = append(out, s)
		}
	}
	return out, nil
}

// count is the number of calls of op (any id when id is "").
func (p *fakeProvider) count(op, id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.calls {
		if c.Op == op && (id == "" || c.ID == id) {
			n++
		}
	}
	return n
}

func (p *fakeProvider) live() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.subs)
}

// fakeImports reads the catch-up imports the store queued through the
// outbox (the relay is not running in these tests).
type fakeImports struct{ pool *pgxpool.Pool }

func (q *fakeImports) catchUps(folderID int64) int {
	rows, err := q.pool.Query(context.Background(), `SELECT data FROM outbox WHERE subject = $1`, contracts.MailImportSubject(folderID))
	if err != nil {
		panic(err)
	}
	datas, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		panic(err)
	}
	n := 0
	for _, d := range datas {
		var r contracts.MailImportRequest
		if json.Unmarshal(d, &r) == nil && r.FolderID == folderID && r.Reason == contracts.ImportCatchUp {
			n++
		}
	}
	return n
}

type env struct {
	pool    *pgxpool.Pool
	store   *postgres.Store
	clock   *clocktest.Clock
	prov    *fakeProvider
	imports *fakeImports
	reg     *prometheus.Registry
	svc     *mail.SubscriptionService
}

func openPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgpkg.Open(context.Background(), pgpkg.Options{URL: url, Schema: postgres.Schema, Migrations: postgres.Migrations()},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{pool: openPool(t, pgtest.NewDatabase(t)), clock: clocktest.New(t0), reg: prometheus.NewRegistry()}
	e.imports = &fakeImports{pool: e.pool}
	e.store = postgres.New(e.pool, e.clock.Now)
	e.prov = newFakeProvider(e.clock.Now)
	e.svc = e.service(t, e.pool)
	return e
}

// service is another SubscriptionService on pool (another process).
func (e *env) service(t *testing.T, pool *pgxpool.Pool) *mail.SubscriptionService {
	t.Helper()
	reg := prometheus.NewRegistry()
	if e.svc == nil {
		reg = e.reg
	}
	m, err := mail.NewSubscriptionMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	return mail.NewSubscriptionService(mail.SubscriptionOptions{Store: postgres.New(pool, e.clock.Now), Provider: e.prov,
		PublicBaseURL: baseURL, Lifetime: 70 * time.Hour, Metrics: m, Now: e.clock.Now,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// channel creates a channel with folders (external ids) of the customer.
func (e *env) channel(t *testing.T, customerID int64, in mail.ChannelInput, folders ...string) (mail.Channel, []mail.Folder) {
	t.Helper()
	for _, f := range folders {
		in.Folders = append(in.Folders, mail.FolderInput{ExternalFolderID: f, DisplayName: f, AutoRetrieveEmails: in.AutoRetrieveEmails})
	}
	ctx := context.Background()
	if in.Provider == mail.ProviderMicrosoft365 {
		seed.ConnectTenant(t, e.pool, customerID, in.ProviderTenantID)
	}
	c, err := e.store.CreateChannel(ctx, customerID, in)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := e.store.AllFolders(ctx, customerID, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	return c, fs
}

var seq int

func m365(on bool) mail.ChannelInput {
	seq++
	return mail.ChannelInput{Name: "support", Kind: mail.KindEmail, EmailAddress: fmt.Sprintf("support%d@contoso.com", seq),
		Provider: mail.ProviderMicrosoft365, ProviderTenantID: tenantA, AutoRetrieveEmails: on}
}

// folderRow is what the folder row holds of its subscription.
type folderRow struct {
	SubscriptionID, ClientState string
	Expiration, RenewRequested  *time.Time
}

func (e *env) row(t *testing.T, folderID int64) folderRow {
	t.Helper()
	var r folderRow
	err := e.pool.QueryRow(context.Background(), `SELECT coalesce(provider_subscription_id, ''), coalesce(client_state, ''),
		provider_subscription_expiration, renew_requested_at FROM channel_folders WHERE folder_id = $1`, folderID).
		Scan(&r.SubscriptionID, &r.ClientState, &r.Expiration, &r.RenewRequested)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (e *env) sqlExec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := e.pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

func TestSyncCreatesWithPendingClientState(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c, fs := e.channel(t, customerA, m365(true), "inbox", "AAMkAD-sales")
	var seen []string
	e.prov.onCreate = func(req mail.NewProviderSubscription) {
		// The folder already holds the secret, committed, and no id yet.
		var state, id string
		err := e.pool.QueryRow(ctx, `SELECT coalesce(client_state, ''), coalesce(provider_subscription_id, '')
			FROM channel_folders WHERE channel_id = $1 AND external_folder_id = $2`, c.ID, req.FolderID).Scan(&state, &id)
		if err != nil {
			t.Error(err)
		}
		if state == "" || state != req.ClientState || id != "" {
			t.Errorf("at create of %s the row has client state %q and id %q; the request has %q", req.FolderID, state, id, req.ClientState)
		}
		if req.NotificationURL != notifyURL || req.LifecycleNotificationURL != notifyURL {
			t.Errorf("notification URLs %q, %q", req.NotificationURL, req.LifecycleNotificationURL)
		}
		if !req.Expiration.Equal(t0.Add(70*time.Hour)) || req.Mailbox != c.EmailAddress {
			t.Errorf("request %+v", req)
		}
		if len(req.ClientState) < 40 || len(req.ClientState) > 128 {
			t.Errorf("client state of %d characters", len(req.ClientState))
		}
		seen = append(seen, req.ClientState)
	}
	out, err := e.svc.SyncChannel(ctx, customerA, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || len(seen) != 2 || seen[0] == seen[1] {
		t.Fatalf("outcomes %+v, client states %q", out, seen)
	}
	for i, o := range out {
		r := e.row(t, fs[i].ID)
		want := t0.Add(70*time.Hour - grantedCut)
		if o.Outcome != mail.OutcomeSubscribed || o.SubscriptionID == "" || r.SubscriptionID != o.SubscriptionID ||
			r.Expiration == nil || !r.Expiration.Equal(want) || !o.SubscriptionExpiration.Equal(want) || r.ClientState != seen[i] {
			t.Errorf("folder %d: outcome %+v, row %+v; want the granted expiry %v", i, o, r, want)
		}
		if n := e.imports.catchUps(fs[i].ID); n != 1 {
			t.Errorf("folder %d: %d catch-up imports", i, n)
		}
	}
	// A second sync finds them active and asks nothing.
	out, err = e.svc.SyncChannel(ctx, customerA, c.ID)
	if err != nil || out[0].Outcome != mail.OutcomeActive || e.prov.count("create", "") != 2 {
		t.Fatalf("second sync: %+v %v, %d creates", out, err, e.prov.count("create", ""))
	}
}

func TestConcurrentSyncsCreateOneSubscriptionPerFolder(t *testing.T) {
	e := newEnv(t)
	e.prov.latency = 20 * time.Millisecond
	c, fs := e.channel(t, customerA, m365(true), "inbox", "f2", "f3")
	other := e.service(t, openPool(t, e.pool.Config().ConnString()))
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for _, svc := range []*mail.SubscriptionService{e.svc, other, e.svc, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := svc.SyncChannel(context.Background(), customerA, c.ID)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range fs {
		if n := e.prov.count("create", f.ExternalFolderID); n != 1 {
			t.Errorf("folder %s: %d creates", f.ExternalFolderID, n)
		}
		if e.row(t, f.ID).SubscriptionID == "" {
			t.Errorf("folder %s has no subscription", f.ExternalFolderID)
		}
	}
}

func TestSyncProviderErrors(t *testing.T) {
	cases := []struct {
		name      string
		err       error
		wantRetry time.Duration
	}{
		{name: "5xx waits the retry delay", err: errors.New("graph: 503 service unavailable"), wantRetry: time.Minute},
		{name: "429 waits its Retry-After", err: &mail.ProviderThrottled{RetryAfter: 5 * time.Minute}, wantRetry: 5 * time.Minute},
		{name: "429 shorter than the delay waits its Retry-After", err: &mail.ProviderThrottled{RetryAfter: 2 * time.Second}, wantRetry: 2 * time.Second},
		{name: "429 without Retry-After waits the delay", err: &mail.ProviderThrottled{}, wantRetry: time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			c, fs := e.channel(t, customerA, m365(true), "inbox")
			e.prov.failNext("create", tc.err)
			out, err := e.svc.SyncChannel(context.Background(), customerA, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			r := e.row(t, fs[0].ID)
			if out[0].Outcome != mail.OutcomeFailed || out[0].Error != tc.err.Error() || r.SubscriptionID != "" ||
				r.RenewRequested == nil || !r.RenewRequested.Equal(t0.Add(tc.wantRetry)) || e.imports.catchUps(fs[0].ID) != 0 {
				t.Fatalf("outcome %+v, row %+v", out[0], r)
			}
		})
	}
}
