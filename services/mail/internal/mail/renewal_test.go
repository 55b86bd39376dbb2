package mail_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"supportplatform.dev/services/mail/internal/mail"
)

// subscribed makes a channel of the tenant with live subscriptions on its
// folders and returns the folders as stored.
func (e *env) subscribed(t *testing.T, tenant string, folders ...string) (mail.Channel, []mail.Folder) {
	t.Helper()
	in := m365(true)
	in.ProviderTenantID = tenant
	c, _ := e.channel(t, customerA, in, folders...)
	if _, err := e.svc.SyncChannel(context.Background(), customerA, c.ID); err != nil {
		t.Fatal(err)
	}
	fs, err := e.store.AllFolders(context.Background(), customerA, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if f.SubscriptionID == "" {
			t.Fatalf("folder %s not subscribed", f.ExternalFolderID)
		}
	}
	return c, fs
}

func (e *env) expireAt(t *testing.T, folderID int64, at time.Time) {
	t.Helper()
	e.sqlExec(t, `UPDATE channel_folders SET provider_subscription_expiration = $2 WHERE folder_id = $1`, folderID, at)
}

func (e *env) renewer(svc *mail.SubscriptionService) *mail.Renewer {
	return mail.NewRenewer(e.store, svc, mail.RenewerOptions{Window: time.Hour})
}

func (e *env) round(t *testing.T) mail.RoundResult {
	t.Helper()
	res, err := e.renewer(e.svc).Round(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// metric reads a counter or gauge of the env's registry ("" label: none).
func metric(t *testing.T, reg *prometheus.Registry, name, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := result == ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					match = true
				}
			}
			if match && m.Counter != nil {
				return m.GetCounter().GetValue()
			}
			if match && m.Gauge != nil {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no metric %s{result=%q}", name, result)
	return 0
}

func TestRenewalWindow(t *testing.T) {
	cases := []struct {
		name      string
		expiresIn time.Duration
		// mark is the renewal mark relative to now (nil: none).
		mark      *time.Duration
		wantRenew bool
	}{
		{name: "expiring in 30 minutes", expiresIn: 30 * time.Minute, wantRenew: true},
		{name: "expiring in 59 minutes", expiresIn: 59 * time.Minute, wantRenew: true},
		{name: "already expired in the store", expiresIn: -time.Minute, wantRenew: true},
		{name: "expiring in 61 minutes", expiresIn: 61 * time.Minute},
		{name: "expiring in two days", expiresIn: 48 * time.Hour},
		{name: "far off but marked for renewal", expiresIn: 48 * time.Hour, mark: ptrTo(time.Duration(0)), wantRenew: true},
		{name: "due but its retry is later", expiresIn: 30 * time.Minute, mark: ptrTo(5 * time.Minute)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			_, fs := e.subscribed(t, tenantA, "inbox")
			e.clock.Advance(24 * time.Hour)
			now := e.clock.Now()
			e.expireAt(t, fs[0].ID, now.Add(tc.expiresIn))
			if tc.mark != nil {
				e.sqlExec(t, `UPDATE channel_folders SET renew_requested_at = $2 WHERE folder_id = $1`, fs[0].ID, now.Add(*tc.mark))
			}
			res := e.round(t)
			r := e.row(t, fs[0].ID)
			renewed := e.prov.count("renew", fs[0].SubscriptionID)
			if !tc.wantRenew {
				if renewed != 0 || res.Renewed != 0 || !r.Expiration.Equal(now.Add(tc.expiresIn)) {
					t.Fatalf("renewed %d times, result %+v, row %+v", renewed, res, r)
				}
				return
			}
			want := now.Add(70*time.Hour - grantedCut)
			if renewed != 1 || res.Renewed != 1 || !r.Expiration.Equal(want) || r.RenewRequested != nil || r.SubscriptionID != fs[0].SubscriptionID {
				t.Fatalf("renewed %d times, result %+v, row %+v, want expiry %v", renewed, res, r, want)
			}
			if got := metric(t, e.reg, "mail_subscription_renewals_total", mail.RenewalOK); got != 1 {
				t.Fatalf("renewals ok = %v", got)
			}
			if got := metric(t, e.reg, "mail_subscriptions_expiring", ""); got != float64(res.Expiring) {
				t.Fatalf("expiring gauge %v, round %d", got, res.Expiring)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestRenewalRecreatesDeletedSubscription(t *testing.T) {
	cases := []struct {
		name       string
		createErr  error
		wantResult string
	}{
		{name: "re-created with a catch-up import", wantResult: mail.RenewalRecreated},
		{name: "re-create fails and is retried by the create pass", createErr: errors.New("graph: 503"), wantResult: mail.RenewalFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			_, fs := e.subscribed(t, tenantA, "inbox")
			f := fs[0]
			before := e.row(t, f.ID)
			e.clock.Advance(70*time.Hour - grantedCut - 30*time.Minute)
			if err := e.prov.Delete(context.Background(), tenantA, f.SubscriptionID); err != nil { // Graph dropped it
				t.Fatal(err)
			}
			if tc.createErr != nil {
				e.prov.failNext("create", tc.createErr)
			}
			res := e.round(t)
			r := e.row(t, f.ID)
			if got := metric(t, e.reg, "mail_subscription_renewals_total", tc.wantResult); got != 1 {
				t.Fatalf("renewals %s = %v (result %+v)", tc.wantResult, got, res)
			}
			if tc.createErr == nil {
				if res.Recreated != 1 || r.SubscriptionID == "" || r.SubscriptionID == f.SubscriptionID ||
					r.ClientState != before.ClientState || e.imports.catchUps(f.ID) != 2 || r.Expiration.Before(e.clock.Now().Add(60*time.Hour)) {
					t.Fatalf("result %+v, row %+v (before %+v), %d catch-ups", res, r, before, e.imports.catchUps(f.ID))
				}
				return
			}
			retry := e.clock.Now().Add(time.Minute)
			if res.RenewFailed != 1 || r.SubscriptionID != "" || r.RenewRequested == nil || !r.RenewRequested.Equal(retry) {
				t.Fatalf("result %+v, row %+v", res, r)
			}
			// Not again before the retry is due, then created.
			if res := e.round(t); res.Created != 0 || e.prov.count("create", "") != 2 {
				t.Fatalf("retried early: %+v", res)
			}
			e.clock.Advance(time.Minute)
			if res := e.round(t); res.Created != 1 || e.row(t, f.ID).SubscriptionID == "" || e.imports.catchUps(f.ID) != 2 {
				t.Fatalf("not created once due: %+v, row %+v", res, e.row(t, f.ID))
			}
		})
	}
}

func TestRenewalHonoursRetryAfter(t *testing.T) {
	e := newEnv(t)
	_, throttled := e.subscribed(t, tenantA, "inbox", "archive")
	_, other := e.subscribed(t, tenantB, "inbox")
	e.clock.Advance(69 * time.Hour)
	e.prov.failNext("renew", &mail.ProviderThrottled{RetryAfter: 30 * time.Second})
	callsA := func() int {
		return e.prov.count("renew", throttled[0].SubscriptionID) + e.prov.count("renew", throttled[1].SubscriptionID)
	}

	res := e.round(t)
	if callsA() != 1 || e.prov.count("renew", other[0].SubscriptionID) != 1 || res.RenewFailed != 1 || res.Renewed != 1 {
		t.Fatalf("first round: %+v, tenant A called %d times", res, callsA())
	}
	e.clock.Advance(29 * time.Second)
	if res := e.round(t); callsA() != 1 || res.Renewed != 0 {
		t.Fatalf("tenant called before its Retry-After: %+v, %d calls", res, callsA())
	}
	e.clock.Advance(time.Second)
	if res := e.round(t); callsA() != 3 || res.Renewed != 2 {
		t.Fatalf("after Retry-After: %+v, %d calls", res, callsA())
	}
}

func TestTwoRenewersRenewEachSubscriptionOnce(t *testing.T) {
	e := newEnv(t)
	var folders []mail.Folder
	for i := range 4 {
		_, fs := e.subscribed(t, tenantA, fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i), fmt.Sprintf("c%d", i))
		folders = append(folders, fs...)
	}
	e.clock.Advance(69 * time.Hour)
	e.prov.latency = 5 * time.Millisecond
	other := e.service(t, openPool(t, e.pool.Config().ConnString()))
	var wg sync.WaitGroup
	results := make([]mail.RoundResult, 2)
	for i, svc := range []*mail.SubscriptionService{e.svc, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.renewer(svc).Round(context.Background())
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	for _, f := range folders {
		if n := e.prov.count("renew", f.SubscriptionID); n != 1 {
			t.Errorf("%s renewed %d times", f.SubscriptionID, n)
		}
	}
	if results[0].Renewed+results[1].Renewed != len(folders) || results[0].Renewed == 0 || results[1].Renewed == 0 {
		t.Errorf("results %+v: both renewers should have taken a share of %d", results, len(folders))
	}
}

func TestRenewalDeletesRetiredWithBackoff(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c, fs := e.subscribed(t, tenantA, "inbox", "archive")
	e.prov.failNext("delete", errors.New("graph: 500"), errors.New("graph: 500"))
	if _, err := e.svc.Unsubscribe(ctx, customerA, c.ID); err != nil {
		t.Fatal(err)
	}
	// The unsubscribe tried both: one failed (attempt 1, retry in 1m),
	// the next call failed too... order is by id; check counts instead.
	retired := func() map[string]int {
		left, err := e.store.RetiredSubscriptions(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, r := range left {
			out[r.ID] = r.Attempts
		}
		return out
	}
	if got := retired(); len(got) != 2 || got[fs[0].SubscriptionID] != 1 || got[fs[1].SubscriptionID] != 1 {
		t.Fatalf("after unsubscribe: %v", got)
	}
	steps := []struct {
		name      string
		advance   time.Duration
		fail      error
		wantCalls int // delete calls in this round
		want      map[string]int
	}{
		{name: "not due yet", advance: 59 * time.Second, wantCalls: 0, want: map[string]int{fs[0].SubscriptionID: 1, fs[1].SubscriptionID: 1}},
		{name: "due after 1m; one fails again", advance: time.Second, fail: errors.New("graph: 503"), wantCalls: 2, want: map[string]int{fs[0].SubscriptionID: 2}},
		{name: "the second backoff is 2m", advance: 119 * time.Second, wantCalls: 0, want: map[string]int{fs[0].SubscriptionID: 2}},
		{name: "a 404 counts as deleted", advance: time.Second, fail: mail.ErrProviderNotFound, wantCalls: 1, want: map[string]int{}},
	}
	for _, st := range steps {
		e.clock.Advance(st.advance)
		if st.fail != nil {
			e.prov.failNext("delete", st.fail)
		}
		before := e.prov.count("delete", "")
		e.round(t)
		got := retired()
		if calls := e.prov.count("delete", "") - before; calls != st.wantCalls || fmt.Sprint(got) != fmt.Sprint(st.want) {
			t.Fatalf("%s: %d delete calls, retired %v; want %d, %v", st.name, calls, got, st.wantCalls, st.want)
		}
	}
	if got := metric(t, e.reg, "mail_subscription_deletes_total", "failed"); got != 3 {
		t.Fatalf("failed deletes %v", got)
	}
}

func TestRenewalCreatesMissingAndRetiresUnwanted(t *testing.T) {
	e := newEnv(t)
	// Switched on but never synced (the API failed before the provider).
	_, missing := e.channel(t, customerA, m365(true), "inbox")
	// Switched off behind the store's back: its subscription must go.
	_, unwanted := e.subscribed(t, tenantA, "inbox")
	e.sqlExec(t, `UPDATE channel_folders SET auto_retrieve_emails = false WHERE folder_id = $1`, unwanted[0].ID)
	// Switched off on a provider none channel: nothing to do.
	in := m365(true)
	in.Provider, in.ProviderTenantID = mail.ProviderNone, ""
	e.channel(t, customerA, in, "inbox")

	res := e.round(t)
	if res.Created != 1 || res.Deleted != 1 || e.row(t, missing[0].ID).SubscriptionID == "" || e.imports.catchUps(missing[0].ID) != 1 {
		t.Fatalf("result %+v, missing row %+v", res, e.row(t, missing[0].ID))
	}
	if r := e.row(t, unwanted[0].ID); r.SubscriptionID != "" || e.prov.count("delete", unwanted[0].SubscriptionID) != 1 {
		t.Fatalf("unwanted row %+v, calls %+v", r, e.prov.calls)
	}
	if res := e.round(t); res != (mail.RoundResult{}) {
		t.Fatalf("second round did %+v", res)
	}
}

func TestRunStopsAfterTheFolderInHand(t *testing.T) {
	e := newEnv(t)
	_, fs := e.subscribed(t, tenantA, "inbox", "archive")
	e.clock.Advance(69 * time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	entered := make(chan struct{})
	release := make(chan struct{})
	e.prov.latency = 0
	hook := &blockingProvider{fakeProvider: e.prov, entered: entered, release: release}
	svc := mail.NewSubscriptionService(mail.SubscriptionOptions{Store: e.store, Provider: hook,
		PublicBaseURL: baseURL, Now: e.clock.Now})
	done := make(chan struct{})
	go func() {
		defer close(done)
		mail.NewRenewer(e.store, svc, mail.RenewerOptions{}).Run(ctx, time.Hour)
	}()
	<-entered
	cancel()
	close(release)
	<-done
	renewed := 0
	for _, f := range fs {
		if e.row(t, f.ID).Expiration.After(e.clock.Now().Add(time.Hour)) {
			renewed++
		}
	}
	if renewed != 1 || e.prov.count("renew", "") != 1 {
		t.Fatalf("%d folders renewed, %d calls: want the one in hand finished and no other", renewed, e.prov.count("renew", ""))
	}
}

// blockingProvider holds the first Renew until released.
type blockingProvider struct {
	*fakeProvider
	once             sync.Once
	entered, release chan struct{}
}

func (b *blockingProvider) Renew(ctx context.Context, tenant, id string, exp time.Time) (mail.ProviderSubscription, error) {
	b.once.Do(func() { close(b.entered); <-b.release })
	return b.fakeProvider.Renew(ctx, tenant, id, exp)
}
