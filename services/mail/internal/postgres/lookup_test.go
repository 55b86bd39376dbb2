package postgres_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/services/mail/internal/mail"
	"supportplatform.dev/services/mail/internal/postgres"
	"supportplatform.dev/services/mail/internal/seed"
)

var clock = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

func newStore(t *testing.T) (*postgres.Store, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.NewSchema(t, postgres.Schema, postgres.Migrations())
	s := postgres.New(pool, func() time.Time { return clock })
	remember(s, pool)
	return s, pool
}

// pools are the stores' pools, for seeding the tenant connections their
// channels need (seed.ConnectTenant).
var pools sync.Map

func remember(s *postgres.Store, pool *pgxpool.Pool) { pools.Store(s, pool) }

func poolOf(s *postgres.Store) *pgxpool.Pool {
	p, _ := pools.Load(s)
	return p.(*pgxpool.Pool)
}

// mustMailChannel creates a microsoft365 channel of the customer with the
// given provider folders.
func mustMailChannel(t *testing.T, s *postgres.Store, customerID int64, address string, on bool, folders ...string) (mail.Channel, []mail.Folder) {
	t.Helper()
	ctx := context.Background()
	in := mail.ChannelInput{Name: "Support " + address, Kind: mail.KindEmail, EmailAddress: address,
		Provider: mail.ProviderMicrosoft365, ProviderTenantID: fmt.Sprintf("c%d.contoso.onmicrosoft.com", customerID), AutoRetrieveEmails: on}
	for _, f := range folders {
		in.Folders = append(in.Folders, mail.FolderInput{ExternalFolderID: f, DisplayName: f, AutoRetrieveEmails: on})
	}
	in, err := in.Normalize(true)
	if err != nil {
		t.Fatal(err)
	}
	seed.ConnectTenant(t, poolOf(s), customerID, in.ProviderTenantID)
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

// mustPlainChannel creates an e-mail channel without provider.
func mustPlainChannel(t *testing.T, s *postgres.Store, customerID int64, address string, on bool, folders ...string) (mail.Channel, []mail.Folder) {
	t.Helper()
	ctx := context.Background()
	in := mail.ChannelInput{Name: "Plain " + address, Kind: mail.KindEmail, EmailAddress: address, AutoRetrieveEmails: on}
	for _, f := range folders {
		in.Folders = append(in.Folders, mail.FolderInput{ExternalFolderID: f, DisplayName: f, AutoRetrieveEmails: on})
	}
	in, err := in.Normalize(true)
	if err != nil {
		t.Fatal(err)
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

// setSubscription stores a provider subscription on a folder, as the
// subscription job does.
func setSubscription(t *testing.T, pool *pgxpool.Pool, folderID int64, subID, clientState string, exp time.Time) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `UPDATE channel_folders SET provider_subscription_id = $2, client_state = $3,
		provider_subscription_expiration = $4 WHERE folder_id = $1`, folderID, subID, clientState, exp); err != nil {
		t.Fatal(err)
	}
}

type folderRow struct {
	SubscriptionID   *string
	ClientState      *string
	Expiration       *time.Time
	RenewRequestedAt *time.Time
	LastNotification *time.Time
}

func readFolderRow(t *testing.T, pool *pgxpool.Pool, folderID int64) folderRow {
	t.Helper()
	var r folderRow
	if err := pool.QueryRow(context.Background(), `SELECT provider_subscription_id, client_state, provider_subscription_expiration,
		renew_requested_at, last_notification_at FROM channel_folders WHERE folder_id = $1`, folderID).
		Scan(&r.SubscriptionID, &r.ClientState, &r.Expiration, &r.RenewRequestedAt, &r.LastNotification); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTargetBySubscription(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	c, fs := mustMailChannel(t, s, 7, "support@contoso.com", true, "inbox", "AAMk=")
	exp := clock.Add(72 * time.Hour)
	setSubscription(t, pool, fs[1].ID, "sub-1", "secret-1", exp)

	tests := []struct {
		name   string
		subID  string
		want   int64
		exists bool
	}{
		{"held by the second folder", "sub-1", fs[1].ID, true},
		{"unknown id", "sub-2", 0, false},
		{"ids are case-sensitive", "SUB-1", 0, false},
		{"empty id", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.TargetBySubscription(ctx, tt.subID)
			if !tt.exists {
				if !apperr.Is(err, apperr.NotFound) {
					t.Fatalf("error = %v, want not found", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Folder.ID != tt.want || got.ClientState != "secret-1" {
				t.Fatalf("target = %+v", got)
			}
			// Every field as the customer-scoped reads give them.
			wantFolder, err := s.Folder(ctx, 7, c.ID, tt.want)
			if err != nil {
				t.Fatal(err)
			}
			wantChannel, err := s.Channel(ctx, 7, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Folder, wantFolder) {
				t.Errorf("folder = %+v, want %+v", got.Folder, wantFolder)
			}
			if !got.Channel.CreatedAt.Equal(wantChannel.CreatedAt) {
				t.Errorf("channel created %v, want %v", got.Channel.CreatedAt, wantChannel.CreatedAt)
			}
			got.Channel.CreatedAt = wantChannel.CreatedAt
			if !reflect.DeepEqual(got.Channel, wantChannel) {
				t.Errorf("channel = %+v, want %+v", got.Channel, wantChannel)
			}
			if got.Folder.SubscriptionID != "sub-1" || got.Folder.SubscriptionExpiration == nil || !got.Folder.SubscriptionExpiration.Equal(exp) {
				t.Errorf("subscription = %q %v", got.Folder.SubscriptionID, got.Folder.SubscriptionExpiration)
			}
		})
	}
}

func TestTargetsByMailbox(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	_, a := mustMailChannel(t, s, 1, "shared@contoso.com", true, "inbox", "AAMk=")
	// A mailbox is unique among live microsoft365 channels of all
	// customers: other customers' channels on it have no provider.
	_, b := mustPlainChannel(t, s, 2, "shared@contoso.com", false, "inbox")
	deleted, _ := mustPlainChannel(t, s, 3, "shared@contoso.com", true, "inbox")
	if _, err := s.DeleteChannel(ctx, 3, deleted.ID); err != nil {
		t.Fatal(err)
	}
	_, other := mustMailChannel(t, s, 1, "other@contoso.com", true, "inbox")
	setSubscription(t, pool, a[0].ID, "sub-a", "state-a", clock)
	// The user id resolved for other's address names it too; one resolved
	// for an address the channel no longer has does not.
	if err := s.SaveMailboxUser(ctx, 1, other[0].ChannelID, mail.MailboxUser{Address: "other@contoso.com", ID: "0e5b7c1a-1111-4222-8333-444455556666"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveMailboxUser(ctx, 2, b[0].ChannelID, mail.MailboxUser{Address: "old@contoso.com", ID: "0e5b7c1a-9999-4222-8333-444455556666"}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		mailbox  string
		folderID string
		want     []int64
	}{
		{"two customers, deleted channel left out", "shared@contoso.com", "inbox", []int64{a[0].ID, b[0].ID}},
		{"mailbox without case", "Shared@Contoso.COM", "inbox", []int64{a[0].ID, b[0].ID}},
		{"provider folder id", "shared@contoso.com", "AAMk=", []int64{a[1].ID}},
		{"folder ids are case-sensitive", "shared@contoso.com", "aamk=", nil},
		{"unknown mailbox", "nobody@contoso.com", "inbox", nil},
		{"GUID mailbox finds nothing", "9f4a2c1e-3b5d-4e6f-8a7b-0c1d2e3f4a5b", "inbox", nil},
		{"resolved user id, any case", "0E5B7C1A-1111-4222-8333-444455556666", "inbox", []int64{other[0].ID}},
		{"user id resolved for an old address", "0e5b7c1a-9999-4222-8333-444455556666", "inbox", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.TargetsByMailbox(ctx, tt.mailbox, tt.folderID)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, g := range got {
				ids = append(ids, g.Folder.ID)
				if g.Folder.CustomerID != g.Channel.CustomerID || g.Folder.ChannelID != g.Channel.ID {
					t.Errorf("target mixes rows: %+v", g)
				}
			}
			if !reflect.DeepEqual(ids, tt.want) {
				t.Fatalf("folders = %v, want %v", ids, tt.want)
			}
		})
	}
	got, err := s.TargetsByMailbox(ctx, "shared@contoso.com", "inbox")
	if err != nil {
		t.Fatal(err)
	}
	if got[0].ClientState != "state-a" || got[1].ClientState != "" || got[1].Channel.AutoRetrieveEmails {
		t.Errorf("targets = %+v", got)
	}
}

func TestMarkNotified(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	_, fs := mustMailChannel(t, s, 1, "support@contoso.com", true, "inbox")
	id := fs[0].ID
	steps := []struct {
		name string
		at   time.Time
		want time.Time
	}{
		{"first", clock, clock},
		{"later moves it", clock.Add(time.Minute), clock.Add(time.Minute)},
		{"earlier does not move it back", clock, clock.Add(time.Minute)},
	}
	for _, st := range steps {
		if err := s.MarkNotified(ctx, id, st.at); err != nil {
			t.Fatal(err)
		}
		if r := readFolderRow(t, pool, id); r.LastNotification == nil || !r.LastNotification.Equal(st.want) {
			t.Fatalf("%s: last notification %v, want %v", st.name, r.LastNotification, st.want)
		}
	}
	if err := s.MarkNotified(ctx, id+1000, clock); err != nil {
		t.Errorf("unknown folder: %v", err)
	}
}

func TestRequestRenewal(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	_, fs := mustMailChannel(t, s, 1, "support@contoso.com", true, "inbox")
	id := fs[0].ID
	setSubscription(t, pool, id, "sub-1", "state", clock.Add(time.Hour))
	if err := s.RequestRenewal(ctx, id, clock); err != nil {
		t.Fatal(err)
	}
	// A second request keeps the first time.
	if err := s.RequestRenewal(ctx, id, clock.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	r := readFolderRow(t, pool, id)
	if r.RenewRequestedAt == nil || !r.RenewRequestedAt.Equal(clock) || r.SubscriptionID == nil || *r.SubscriptionID != "sub-1" {
		t.Fatalf("row = %+v", r)
	}
	if err := s.RequestRenewal(ctx, id+1000, clock); !apperr.Is(err, apperr.NotFound) {
		t.Errorf("unknown folder: %v, want not found", err)
	}
}

func TestSubscriptionRemoved(t *testing.T) {
	tests := []struct {
		name      string
		held      string // the folder's subscription before
		removed   string // the one the provider removed
		wantSub   *string
		wantRenew bool
	}{
		{"the folder's own subscription is cleared", "sub-1", "sub-1", nil, true},
		{"a replaced subscription leaves the new one", "sub-2", "sub-1", ptr("sub-2"), false},
		{"a folder without one stays so", "", "sub-1", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, pool := newStore(t)
			ctx := context.Background()
			_, fs := mustMailChannel(t, s, 1, "support@contoso.com", true, "inbox")
			id := fs[0].ID
			if tt.held != "" {
				setSubscription(t, pool, id, tt.held, "state", clock.Add(time.Hour))
			}
			if err := s.SubscriptionRemoved(ctx, id, tt.removed, clock); err != nil {
				t.Fatal(err)
			}
			r := readFolderRow(t, pool, id)
			if !reflect.DeepEqual(r.SubscriptionID, tt.wantSub) {
				t.Errorf("subscription = %v, want %v", deref(r.SubscriptionID), deref(tt.wantSub))
			}
			if tt.wantSub == nil && (r.ClientState != nil || r.Expiration != nil) {
				t.Errorf("client state %v / expiration %v not cleared", deref(r.ClientState), r.Expiration)
			}
			if tt.wantSub != nil && (r.ClientState == nil || r.Expiration == nil) {
				t.Errorf("the new subscription lost its state: %+v", r)
			}
			if got := r.RenewRequestedAt != nil && r.RenewRequestedAt.Equal(clock); got != tt.wantRenew {
				t.Errorf("renew requested = %v, want %v", r.RenewRequestedAt, tt.wantRenew)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// PendingTargets finds a folder by the client state stored before its
// subscription create, only until the subscription id is stored.
func TestPendingTargets(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	_, fs := mustMailChannel(t, s, 1, "pending@contoso.com", true, "inbox")
	_, other := mustMailChannel(t, s, 2, "active@contoso.com", true, "inbox")
	setSubscription(t, pool, other[0].ID, "sub-active", "active-state", clock.Add(time.Hour))
	if err := s.SavePending(ctx, 1, fs[0].ID, "pending-state"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		state string
		want  int64
	}{
		{"create in flight", "pending-state", fs[0].ID},
		{"another client state", "guess", 0},
		{"an active folder's client state", "active-state", 0},
		{"empty", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, err := s.PendingTargets(ctx, tt.state)
			if err != nil {
				t.Fatal(err)
			}
			if (tt.want == 0 && len(ts) != 0) || (tt.want != 0 && (len(ts) != 1 || ts[0].Folder.ID != tt.want ||
				ts[0].ClientState != tt.state || ts[0].Channel.CustomerID != 1)) {
				t.Fatalf("targets %+v, want folder %d", ts, tt.want)
			}
		})
	}
	setSubscription(t, pool, fs[0].ID, "sub-new", "pending-state", clock.Add(time.Hour))
	if ts, err := s.PendingTargets(ctx, "pending-state"); err != nil || len(ts) != 0 {
		t.Fatalf("after the id is stored: %+v, %v", ts, err)
	}
}
