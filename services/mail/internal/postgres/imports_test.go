package postgres_test

import (
	"context"
	"testing"
	"time"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/services/mail/internal/importer"
	"supportplatform.dev/services/mail/internal/mail"
	"supportplatform.dev/services/mail/internal/postgres"
)

func TestImportTargetScopeAndImportable(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	c, fs := mustMailChannel(t, s, 1, "support@contoso.com", true, "inbox", "AAMkAD-Archive")
	off, offFolders := mustMailChannel(t, s, 1, "quiet@contoso.com", false, "inbox")
	other, otherFolders := mustMailChannel(t, s, 2, "support@fabrikam.com", true, "inbox")

	got, err := s.ImportTarget(ctx, 1, c.ID, fs[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	want := importer.Target{CustomerID: 1, ChannelID: c.ID, FolderID: fs[1].ID, Mailbox: "support@contoso.com",
		TenantID: "c1.contoso.onmicrosoft.com", ExternalFolderID: "AAMkAD-Archive", Importable: true}
	if got != want {
		t.Fatalf("target %+v, want %+v", got, want)
	}
	if got, err := s.ImportTarget(ctx, 1, off.ID, offFolders[0].ID); err != nil || got.Importable {
		t.Fatalf("switched-off folder: %+v, %v; want not importable", got, err)
	}
	cases := []struct {
		name                      string
		customer, channel, folder int64
	}{
		{"another customer's folder", 1, other.ID, otherFolders[0].ID},
		{"through another customer", 2, c.ID, fs[0].ID},
		{"a folder of another channel", 1, off.ID, fs[0].ID},
		{"no such folder", 1, c.ID, 999999},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.ImportTarget(ctx, tc.customer, tc.channel, tc.folder); !apperr.Is(err, apperr.NotFound) {
				t.Fatalf("error %v, want not found", err)
			}
		})
	}
	// A deleted channel's folders are kept but not imported.
	if _, err := s.DeleteChannel(ctx, 1, c.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ImportTarget(ctx, 1, c.ID, fs[0].ID); err != nil || got.Importable {
		t.Fatalf("deleted channel: %+v, %v; want not importable", got, err)
	}
}

func TestImportRequestCounter(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	_, fs := mustMailChannel(t, s, 1, "support@contoso.com", true, "inbox")
	for i := range 3 {
		if err := s.RequestImport(ctx, 1, fs[0].ID, clock.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.ImportRequests(ctx, 1, fs[0].ID)
	if err != nil || n != 3 {
		t.Fatalf("requests %d, %v; want 3", n, err)
	}
	st, err := s.ImportState(ctx, 1, fs[0].ID)
	if err != nil || st.ImportRequestedAt == nil || !st.ImportRequestedAt.Equal(clock.Add(2*time.Second)) {
		t.Fatalf("state %+v, %v", st, err)
	}
	if _, err := s.ImportRequests(ctx, 2, fs[0].ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("another customer's counter: %v", err)
	}
	if err := s.RequestImport(ctx, 2, fs[0].ID, clock); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("a request through another customer: %v", err)
	}
	if n, _ := s.ImportRequests(ctx, 1, fs[0].ID); n != 3 {
		t.Fatalf("requests %d after another customer's request, want 3", n)
	}
}

func TestImportLeaseStateAndExclusion(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	c, fs := mustMailChannel(t, s, 1, "support@contoso.com", true, "inbox", "sent")
	locks := postgres.NewImportLocks(pool)

	lease, ok, err := locks.TryLockImport(ctx, 1, fs[0].ID)
	if err != nil || !ok {
		t.Fatalf("first lock: %v %v", ok, err)
	}
	// Held: nobody else gets it; another folder's lock is free.
	if _, ok, err := locks.TryLockImport(ctx, 1, fs[0].ID); err != nil || ok {
		t.Fatalf("second lock of the folder: %v %v, want busy", ok, err)
	}
	other, ok, err := locks.TryLockImport(ctx, 1, fs[1].ID)
	if err != nil || !ok {
		t.Fatalf("another folder's lock: %v %v", ok, err)
	}
	other.Release()

	if err := s.RequestImport(ctx, 1, fs[0].ID, clock); err != nil {
		t.Fatal(err)
	}
	tg, err := lease.Load(ctx)
	if err != nil || tg.Requests != 1 || tg.DeltaLink != "" || !tg.Importable {
		t.Fatalf("load %+v, %v", tg, err)
	}
	if err := lease.Succeeded(ctx, importer.RoundResult{DeltaLink: "https://graph/delta?token=1", Published: 7}, clock); err != nil {
		t.Fatal(err)
	}
	if err := lease.Succeeded(ctx, importer.RoundResult{DeltaLink: "https://graph/delta?token=2", Published: 3}, clock.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := lease.Failed(ctx, "graph: status 503", clock.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	st, err := s.ImportState(ctx, 1, fs[0].ID)
	if err != nil || st.DeltaLink != "https://graph/delta?token=2" || st.ImportedTotal != 10 ||
		st.LastImportError != "graph: status 503" || !st.LastImportAt.Equal(clock.Add(time.Minute)) || !st.DeltaLinkAt.Equal(clock.Add(time.Minute)) {
		t.Fatalf("state %+v, %v", st, err)
	}
	if tg, err := s.ImportTarget(ctx, 1, c.ID, fs[0].ID); err != nil || tg.DeltaLink != "https://graph/delta?token=2" {
		t.Fatalf("target %+v, %v", tg, err)
	}
	// A folder pointed at another provider folder does not follow the
	// old folder's link.
	if _, err := s.UpdateFolder(ctx, 1, c.ID, fs[0].ID, mail.FolderInput{ExternalFolderID: "AAMk-other", AutoRetrieveEmails: true}); err != nil {
		t.Fatal(err)
	}
	if tg, err := lease.Load(ctx); err != nil || tg.DeltaLink != "" || tg.ExternalFolderID != "AAMk-other" {
		t.Fatalf("after the folder changed: %+v, %v", tg, err)
	}
	// The next success stores a link for the new provider folder.
	if err := lease.Succeeded(ctx, importer.RoundResult{DeltaLink: "https://graph/delta?token=3", Published: 0}, clock); err != nil {
		t.Fatal(err)
	}
	if tg, err := s.ImportTarget(ctx, 1, c.ID, fs[0].ID); err != nil || tg.DeltaLink != "https://graph/delta?token=3" {
		t.Fatalf("target %+v, %v", tg, err)
	}
	if err := lease.ClearDeltaLink(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := s.ImportState(ctx, 1, fs[0].ID); err != nil || st.DeltaLink != "" || st.DeltaLinkAt != nil {
		t.Fatalf("after clearing: %+v, %v", st, err)
	}

	lease.Release()
	lease.Release() // a second release is harmless
	if err := lease.Succeeded(ctx, importer.RoundResult{DeltaLink: "late", Published: 1}, clock); err == nil {
		t.Fatal("a released lease still writes")
	}
	again, ok, err := locks.TryLockImport(ctx, 1, fs[0].ID)
	if err != nil || !ok {
		t.Fatalf("lock after release: %v %v", ok, err)
	}
	again.Release()
	// Released locks went back with their connections: none is held.
	var held int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2`).Scan(&held); err != nil || held != 0 {
		t.Fatalf("%d advisory locks still held, %v", held, err)
	}
}

// A lock whose connection dies is gone: its lease notices and can write
// nothing more, and another import takes the folder.
func TestImportLeaseLostWithItsConnection(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	_, fs := mustMailChannel(t, s, 1, "support@contoso.com", true, "inbox")
	locks := postgres.NewImportLocks(pool)
	lease, ok, err := locks.TryLockImport(ctx, 1, fs[0].ID)
	if err != nil || !ok {
		t.Fatalf("lock: %v %v", ok, err)
	}
	defer lease.Release()
	if err := lease.Alive(ctx); err != nil {
		t.Fatal(err)
	}
	var killed bool
	// The holder of this database's lock (other tests' databases hold
	// locks of the same ids), waited for until it has exited: without the
	// timeout, pg_terminate_backend only signals, and the lock may still be
	// held when the next TryLockImport asks.
	if err := pool.QueryRow(ctx, `SELECT pg_terminate_backend(pid, 10000) FROM pg_locks
		WHERE locktype = 'advisory' AND objsubid = 2 AND objid = $1
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, fs[0].ID).Scan(&killed); err != nil || !killed {
		t.Fatalf("terminate: %v %v", killed, err)
	}
	if err := lease.Alive(ctx); err == nil {
		t.Fatal("a lease whose connection is gone is alive")
	}
	if err := lease.Succeeded(ctx, importer.RoundResult{DeltaLink: "https://graph/delta?stale", Published: 1}, clock); err == nil {
		t.Fatal("a lease whose connection is gone stored a delta link")
	}
	next, ok, err := locks.TryLockImport(ctx, 1, fs[0].ID)
	if err != nil || !ok {
		t.Fatalf("lock after the holder's connection died: %v %v", ok, err)
	}
	next.Release()
	if st, err := s.ImportState(ctx, 1, fs[0].ID); err != nil || st.DeltaLink != "" {
		t.Fatalf("state %+v, %v", st, err)
	}
}
