package postgres_test

import (
	"context"
	"testing"
	"time"
)

// The transactions that write an event wake the relay after their commit
// (a reset request for an unknown address too, like a known one's) and
// send no NOTIFY, whose lock would serialise the commits of every writer.
func TestEventWritesWakeTheRelayWithoutNotify(t *testing.T) {
	s, db := newStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, a := bootstrap(t, s, "Acme", "admin@acme.test")
	pc, err := db.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn := pc.Hijack()
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `LISTEN outbox_auth`); err != nil {
		t.Fatal(err)
	}
	var wakes []int // the events visible to another connection at each wake
	s = s.WithWake(func() { wakes = append(wakes, count(t, db, `SELECT count(*) FROM outbox`)) })
	if err := s.RequestPasswordReset(ctx, "nobody@acme.test", resetFor("tok-0", t0)); err != nil {
		t.Fatal(err)
	}
	if err := s.RequestPasswordReset(ctx, a.Email, resetFor("tok-1", t0)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResetPassword(ctx, hash("tok-1"), t0.Add(time.Minute), "new-hash"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResetPassword(ctx, hash("tok-1"), t0.Add(time.Minute), "again"); err == nil {
		t.Fatal("a spent token was accepted")
	}
	if len(wakes) != 3 || wakes[0] != 0 || wakes[1] != 1 || wakes[2] != 2 {
		t.Fatalf("events visible at each wake %v, want [0 1 2] (after each commit, none after a failure)", wakes)
	}
	// Notifications arrive in commit order: one from a write would come
	// before the marker.
	exec(t, db, `SELECT pg_notify('outbox_auth', 'marker')`)
	n, err := conn.WaitForNotification(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n.Payload != "marker" {
		t.Fatalf("a write sent a NOTIFY (%q)", n.Payload)
	}
}
