package postgres_test

import (
	"context"
	"testing"
	"time"
)

// A change wakes the relay after its commit and sends no NOTIFY, whose
// lock would serialise the commits of every writer.
func TestChangesWakeTheRelayWithoutNotify(t *testing.T) {
	s, pool := newStoreAndPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pc, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn := pc.Hijack()
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `LISTEN outbox_topics`); err != nil {
		t.Fatal(err)
	}
	var wakes, visible int
	s = s.WithWake(func() {
		wakes++
		// Called after the commit: another connection sees the event.
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&visible); err != nil {
			t.Error(err)
		}
	})
	mustTopic(t, s, tenantA, "Billing")
	if wakes != 1 || visible != 1 {
		t.Fatalf("%d wakes, %d events visible at the wake; want 1, 1", wakes, visible)
	}
	// Notifications arrive in commit order: one from the change would
	// come before the marker.
	if _, err := pool.Exec(ctx, `SELECT pg_notify('outbox_topics', 'marker')`); err != nil {
		t.Fatal(err)
	}
	n, err := conn.WaitForNotification(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n.Payload != "marker" {
		t.Fatalf("the change sent a NOTIFY (%q)", n.Payload)
	}
}
