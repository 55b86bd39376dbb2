package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/apperr"
	pgpkg "supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/services/mail/internal/mail"
	"supportplatform.dev/services/mail/internal/postgres"
	"supportplatform.dev/services/mail/internal/seed"
)

var subClock = time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)

func subStore(t *testing.T) (*postgres.Store, *pgxpool.Pool) {
	t.Helper()
	pool, err := pgpkg.Open(context.Background(), pgpkg.Options{URL: pgtest.NewDatabase(t), Schema: postgres.Schema,
		Migrations: postgres.Migrations()}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := postgres.New(pool, func() time.Time { return subClock })
	remember(s, pool)
	return s, pool
}

func subChannel(t *testing.T, s *postgres.Store, customerID int64, email, provider, tenant string, on bool, folders ...string) (mail.Channel, []mail.Folder) {
	t.Helper()
	in := mail.ChannelInput{Name: "c", Kind: mail.KindEmail, EmailAddress: email, Provider: provider, ProviderTenantID: tenant, AutoRetrieveEmails: on}
	for _, f := range folders {
		in.Folders = append(in.Folders, mail.FolderInput{ExternalFolderID: f, AutoRetrieveEmails: on})
	}
	ctx := context.Background()
	if provider == mail.ProviderMicrosoft365 {
		seed.ConnectTenant(t, poolOf(s), customerID, tenant)
	}
	c, err := s.CreateChannel(ctx, customerID, in)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := s.AllFolders(ctx, customerID, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	return c, fs
}

// subscribe stores a subscription on a folder as the service would.
func subscribe(t *testing.T, s *postgres.Store, f mail.Folder, id string, exp time.Time) {
	t.Helper()
	ctx := context.Background()
	if err := s.SavePending(ctx, f.CustomerID, f.ID, "state-"+id); err != nil {
		t.Fatal(err)
	}
	err := s.WithFolderLock(ctx, f.CustomerID, f.ID, func(ctx context.Context, lf mail.LockedFolder) (mail.FolderUpdate, error) {
		return mail.FolderUpdate{Save: &mail.ProviderSubscription{ID: id, Expiration: exp}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSetAutoRetrieve(t *testing.T) {
	s, pool := subStore(t)
	ctx := context.Background()
	live, liveFolders := subChannel(t, s, 1, "a@contoso.com", mail.ProviderMicrosoft365, "contoso.com", true, "inbox", "x")
	subscribe(t, s, liveFolders[0], "sub-a", subClock.Add(time.Hour))
	deleted, _ := subChannel(t, s, 1, "d@contoso.com", mail.ProviderNone, "", false, "inbox")
	if _, err := s.DeleteChannel(ctx, 1, deleted.ID); err != nil {
		t.Fatal(err)
	}
	web, err := s.CreateChannel(ctx, 1, mail.ChannelInput{Name: "w", Kind: mail.KindWeb, Provider: mail.ProviderNone})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := subChannel(t, s, 2, "o@contoso.com", mail.ProviderNone, "", false, "inbox")

	notFound := []struct {
		name     string
		customer int64
		channel  int64
	}{
		{"unknown", 1, 99999},
		{"another customer's", 1, other.ID},
		{"deleted", 1, deleted.ID},
		{"without an e-mail address", 1, web.ID},
	}
	for _, tc := range notFound {
		t.Run(tc.name, func(t *testing.T) {
			for _, on := range []bool{true, false} {
				_, err := s.SetAutoRetrieve(ctx, tc.customer, tc.channel, on)
				if !apperr.Is(err, apperr.NotFound) {
					t.Fatalf("on=%v: %v", on, err)
				}
			}
		})
	}

	var events int
	count := func() int {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&events); err != nil {
			t.Fatal(err)
		}
		return events
	}
	before := count()
	sw, err := s.SetAutoRetrieve(ctx, 1, live.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if sw.Channel.AutoRetrieveEmails || len(sw.Folders) != 2 || sw.Folders[0].AutoRetrieveEmails || sw.Folders[1].AutoRetrieveEmails ||
		sw.Folders[0].SubscriptionID != "" || sw.Retired[liveFolders[0].ID] != "sub-a" || len(sw.Retired) != 1 || count() != before+1 {
		t.Fatalf("switched off: %+v", sw)
	}
	retired, err := s.RetiredSubscriptions(ctx, 1)
	if err != nil || len(retired) != 1 || retired[0].ID != "sub-a" || retired[0].TenantID != "contoso.com" {
		t.Fatalf("retired %+v %v", retired, err)
	}
	if r, _ := s.RetiredSubscriptions(ctx, 2); len(r) != 0 {
		t.Fatalf("customer 2 sees %+v", r)
	}
	sw, err = s.SetAutoRetrieve(ctx, 1, live.ID, true)
	if err != nil || !sw.Channel.AutoRetrieveEmails || !sw.Folders[0].AutoRetrieveEmails || !sw.Folders[1].AutoRetrieveEmails || len(sw.Retired) != 0 || count() != before+2 {
		t.Fatalf("switched on: %+v %v", sw, err)
	}
}

func TestSavePendingOnlyWhereNoneIs(t *testing.T) {
	s, pool := subStore(t)
	ctx := context.Background()
	_, fs := subChannel(t, s, 1, "a@contoso.com", mail.ProviderMicrosoft365, "contoso.com", true, "inbox", "x")
	state := func(id int64) string {
		var v string
		if err := pool.QueryRow(ctx, `SELECT coalesce(client_state, '') FROM channel_folders WHERE folder_id = $1`, id).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	steps := []struct {
		name     string
		customer int64
		folder   int64
		value    string
		want     string
	}{
		{"first", 1, fs[0].ID, "one", "one"},
		{"a second does not replace it", 1, fs[0].ID, "two", "one"},
		{"another customer cannot write it", 2, fs[1].ID, "evil", ""},
	}
	for _, st := range steps {
		if err := s.SavePending(ctx, st.customer, st.folder, st.value); err != nil {
			t.Fatal(err)
		}
		if got := state(st.folder); got != st.want {
			t.Fatalf("%s: %q, want %q", st.name, got, st.want)
		}
	}
	err := s.WithFolderLock(ctx, 2, fs[0].ID, func(context.Context, mail.LockedFolder) (mail.FolderUpdate, error) {
		t.Fatal("another customer's folder was locked")
		return mail.FolderUpdate{}, nil
	})
	if !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("another customer's lock: %v", err)
	}
}

// waiting counts sessions waiting for a lock.
func waiting(t *testing.T, pool *pgxpool.Pool) int {
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks WHERE NOT granted`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestWithFolderLockSerialises(t *testing.T) {
	s, pool := subStore(t)
	ctx := context.Background()
	_, fs := subChannel(t, s, 1, "a@contoso.com", mail.ProviderMicrosoft365, "contoso.com", true, "inbox")
	inFirst, release := make(chan struct{}), make(chan struct{})
	firstDone := make(chan error, 1)
	go func() {
		firstDone <- s.WithFolderLock(ctx, 1, fs[0].ID, func(ctx context.Context, lf mail.LockedFolder) (mail.FolderUpdate, error) {
			close(inFirst)
			<-release
			return mail.FolderUpdate{Save: &mail.ProviderSubscription{ID: "first", Expiration: subClock}}, nil
		})
	}()
	<-inFirst
	secondSaw := make(chan string, 1)
	go func() {
		_ = s.WithFolderLock(ctx, 1, fs[0].ID, func(ctx context.Context, lf mail.LockedFolder) (mail.FolderUpdate, error) {
			secondSaw <- lf.Folder.SubscriptionID
			return mail.FolderUpdate{}, nil
		})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for waiting(t, pool) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the second lock never waited")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case id := <-secondSaw:
		t.Fatalf("the second ran while the first held the lock (saw %q)", id)
	default:
	}
	close(release)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	if id := <-secondSaw; id != "first" {
		t.Fatalf("the second saw %q, want the first's subscription", id)
	}
}

func TestClaimDue(t *testing.T) {
	s, _ := subStore(t)
	ctx := context.Background()
	now := subClock
	_, a := subChannel(t, s, 1, "a@contoso.com", mail.ProviderMicrosoft365, "tenant-a.com", true, "soon", "later", "marked", "notyet", "none")
	_, b := subChannel(t, s, 2, "b@contoso.com", mail.ProviderMicrosoft365, "tenant-b.com", true, "soon")
	subscribe(t, s, a[0], "a-soon", now.Add(30*time.Minute))
	subscribe(t, s, a[1], "a-later", now.Add(2*time.Hour))
	subscribe(t, s, a[2], "a-marked", now.Add(48*time.Hour))
	subscribe(t, s, a[3], "a-notyet", now.Add(10*time.Minute))
	subscribe(t, s, b[0], "b-soon", now.Add(20*time.Minute))
	if ok, err := markRenewal(t, s, "a-marked", now); !ok || err != nil {
		t.Fatalf("request renewal: %v %v", ok, err)
	}
	if ok, _ := markRenewal(t, s, "a-notyet", now.Add(time.Minute)); !ok {
		t.Fatal("no a-notyet")
	}
	if ok, _ := markRenewal(t, s, "unknown", now); ok {
		t.Fatal("an unknown subscription was marked")
	}
	claimAll := func(skip mail.ClaimSkip) []string {
		var got []string
		for {
			ok, err := s.ClaimDue(ctx, now, time.Hour, skip, func(ctx context.Context, lf mail.LockedFolder) (mail.FolderUpdate, error) {
				got = append(got, lf.Folder.SubscriptionID)
				skip.Folders = append(skip.Folders, lf.Folder.ID)
				if lf.ClientState != "state-"+lf.Folder.SubscriptionID {
					t.Errorf("client state %q", lf.ClientState)
				}
				return mail.FolderUpdate{}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				return got
			}
		}
	}
	cases := []struct {
		name string
		skip mail.ClaimSkip
		want string
	}{
		{"due by expiry or mark, soonest first", mail.ClaimSkip{}, "[a-marked b-soon a-soon]"},
		{"a throttled tenant is skipped", mail.ClaimSkip{Tenants: []string{"tenant-b.com"}}, "[a-marked a-soon]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprint(claimAll(tc.skip)); got != tc.want {
				t.Fatalf("claimed %s, want %s", got, tc.want)
			}
		})
	}

	// A claimed folder is skipped by a concurrent claim.
	held, release, heldDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(heldDone)
		_, _ = s.ClaimDue(ctx, now, time.Hour, mail.ClaimSkip{}, func(ctx context.Context, lf mail.LockedFolder) (mail.FolderUpdate, error) {
			close(held)
			<-release
			return mail.FolderUpdate{}, nil
		})
	}()
	<-held
	if got := fmt.Sprint(claimAll(mail.ClaimSkip{})); got != "[b-soon a-soon]" {
		t.Fatalf("with a-marked held, claimed %s", got)
	}
	close(release)
	<-heldDone

	// A failure's RetryAt takes the folder out until then.
	at := now.Add(5 * time.Minute)
	ok, err := s.ClaimDue(ctx, now, time.Hour, mail.ClaimSkip{}, func(context.Context, mail.LockedFolder) (mail.FolderUpdate, error) {
		return mail.FolderUpdate{RetryAt: &at}, nil
	})
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	if got := fmt.Sprint(claimAll(mail.ClaimSkip{})); got != "[b-soon a-soon]" {
		t.Fatalf("after a retry mark, claimed %s", got)
	}
	// An error from fn rolls back and is returned.
	boom := errors.New("boom")
	if _, err := s.ClaimDue(ctx, now, time.Hour, mail.ClaimSkip{}, func(context.Context, mail.LockedFolder) (mail.FolderUpdate, error) {
		return mail.FolderUpdate{Retire: true}, boom
	}); !errors.Is(err, boom) && !apperr.Is(err, apperr.Internal) {
		t.Fatalf("fn error: %v", err)
	}
	if r, _ := s.RetiredSubscriptions(ctx, 0); len(r) != 0 {
		t.Fatalf("a failed claim retired %+v", r)
	}
	if n, err := s.CountExpiring(ctx, now, time.Hour); n != 3 || err != nil {
		t.Fatalf("expiring %d %v", n, err)
	}
}

func TestMissingAndRetireUnwanted(t *testing.T) {
	s, pool := subStore(t)
	ctx := context.Background()
	now := subClock
	_, on := subChannel(t, s, 1, "a@contoso.com", mail.ProviderMicrosoft365, "tenant-a.com", true, "missing", "has", "later", "off")
	_, none := subChannel(t, s, 1, "n@contoso.com", mail.ProviderNone, "", true, "inbox")
	_, off := subChannel(t, s, 2, "o@contoso.com", mail.ProviderMicrosoft365, "tenant-b.com", false, "inbox")
	subscribe(t, s, on[1], "has", now.Add(48*time.Hour))
	later := now.Add(time.Minute)
	if err := s.WithFolderLock(ctx, 1, on[2].ID, func(context.Context, mail.LockedFolder) (mail.FolderUpdate, error) {
		return mail.FolderUpdate{RetryAt: &later}, nil
	}); err != nil {
		t.Fatal(err)
	}
	subscribe(t, s, on[3], "off", now.Add(48*time.Hour))
	if _, err := pool.Exec(ctx, `UPDATE channel_folders SET auto_retrieve_emails = false WHERE folder_id = $1`, on[3].ID); err != nil {
		t.Fatal(err)
	}
	_ = none
	_ = off

	ids := func(ts []mail.Target) []int64 {
		var out []int64
		for _, t := range ts {
			out = append(out, t.Folder.ID)
		}
		return out
	}
	cases := []struct {
		name string
		now  time.Time
		skip mail.ClaimSkip
		want []int64
	}{
		{"switched on without one", now, mail.ClaimSkip{}, []int64{on[0].ID}},
		{"and the one whose retry is due", later, mail.ClaimSkip{}, []int64{on[0].ID, on[2].ID}},
		{"not of a throttled tenant", later, mail.ClaimSkip{Tenants: []string{"tenant-a.com"}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Missing(ctx, tc.now, tc.skip, 100)
			if err != nil || fmt.Sprint(ids(got)) != fmt.Sprint(tc.want) {
				t.Fatalf("missing %v %v, want %v", ids(got), err, tc.want)
			}
		})
	}

	n, err := s.RetireUnwanted(ctx)
	if err != nil || n != 1 {
		t.Fatalf("retired %d %v", n, err)
	}
	if n, _ := s.RetireUnwanted(ctx); n != 0 {
		t.Fatalf("retired again %d", n)
	}
	retired, _ := s.RetiredSubscriptions(ctx, 0)
	if len(retired) != 1 || retired[0].ID != "off" || retired[0].CustomerID != 1 {
		t.Fatalf("retired %+v", retired)
	}
}

func TestClaimRetiredBackoffAndScope(t *testing.T) {
	s, _ := subStore(t)
	ctx := context.Background()
	now := subClock
	_, a := subChannel(t, s, 1, "a@contoso.com", mail.ProviderMicrosoft365, "tenant-a.com", true, "inbox")
	_, b := subChannel(t, s, 2, "b@contoso.com", mail.ProviderMicrosoft365, "tenant-b.com", true, "inbox")
	subscribe(t, s, a[0], "ra", now.Add(time.Hour))
	subscribe(t, s, b[0], "rb", now.Add(time.Hour))
	for _, c := range []struct{ customer, channel int64 }{{1, a[0].ChannelID}, {2, b[0].ChannelID}} {
		if _, err := s.SetAutoRetrieve(ctx, c.customer, c.channel, false); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(customer int64, at time.Time, res mail.RetiredResult) []string {
		var got []string
		skip := mail.ClaimSkip{}
		for {
			ok, err := s.ClaimRetired(ctx, customer, at, skip, func(ctx context.Context, r mail.RetiredSubscription) mail.RetiredResult {
				got = append(got, r.ID)
				skip.Retired = append(skip.Retired, r.ID)
				return res
			})
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				return got
			}
		}
	}
	fail := mail.RetiredResult{RetryAt: now.Add(time.Minute), Error: "graph: 500"}
	steps := []struct {
		name     string
		customer int64
		at       time.Time
		res      mail.RetiredResult
		want     string
	}{
		{"a customer claims only its own", 1, now, fail, "[ra]"},
		{"a failed one waits for its next attempt", 0, now, fail, "[rb]"},
		{"then both are due", 0, now.Add(time.Minute), fail, "[ra rb]"},
		{"done removes them", 0, now.Add(time.Minute), mail.RetiredResult{Done: true}, "[ra rb]"},
		{"none left", 0, now.Add(time.Hour), mail.RetiredResult{Done: true}, "[]"},
	}
	for _, st := range steps {
		if got := fmt.Sprint(claim(st.customer, st.at, st.res)); got != st.want {
			t.Fatalf("%s: claimed %s, want %s", st.name, got, st.want)
		}
	}
	// Attempts and errors were counted on the way.
	_, c := subChannel(t, s, 1, "c@contoso.com", mail.ProviderMicrosoft365, "tenant-a.com", true, "inbox")
	subscribe(t, s, c[0], "rc", now.Add(time.Hour))
	if _, err := s.SetAutoRetrieve(ctx, 1, c[0].ChannelID, false); err != nil {
		t.Fatal(err)
	}
	claim(1, now, fail)
	claim(1, now.Add(time.Minute), mail.RetiredResult{RetryAt: now.Add(3 * time.Minute), Error: "graph: 429"})
	r, err := s.RetiredSubscriptions(ctx, 1)
	if err != nil || len(r) != 1 || r[0].Attempts != 2 || r[0].LastError != "graph: 429" {
		t.Fatalf("retired %+v %v", r, err)
	}
}

// markRenewal marks the folder of a subscription for renewal at at (the
// notifier's RequestRenewal by folder id); false when no folder has it.
func markRenewal(t *testing.T, s *postgres.Store, subscriptionID string, at time.Time) (bool, error) {
	t.Helper()
	f, err := s.TargetBySubscription(t.Context(), subscriptionID)
	if apperr.Is(err, apperr.NotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, s.RequestRenewal(t.Context(), f.Folder.ID, at)
}
