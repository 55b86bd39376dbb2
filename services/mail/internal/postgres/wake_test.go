package postgres_test

import (
	"context"
	"testing"
	"time"

	"supportplatform.dev/services/mail/internal/replier"
)

// A transaction that writes an event wakes the relay after its commit (in
// the import worker a NOTIFY to mailingest's relay, sent on its own) and
// sends no NOTIFY itself.
func TestEventWritesWakeTheRelayWithoutNotify(t *testing.T) {
	s, pool := newStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pc, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn := pc.Hijack()
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `LISTEN outbox_mail`); err != nil {
		t.Fatal(err)
	}
	var wakes []int // the events visible to another connection at each wake
	s = s.WithWake(func() { wakes = append(wakes, len(replyEvents(t, pool))) })
	r := replier.Reply{CustomerID: 7, MessageID: 100, TicketID: 9, ChannelID: 3}
	if _, err := s.ClaimReply(ctx, r, replier.ClaimRequest{Settle: replier.StatusFailed, Reason: "no address", LeaseUntil: clock.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if len(wakes) != 1 || wakes[0] != 1 {
		t.Fatalf("events visible at each wake %v, want [1]", wakes)
	}
	// Notifications arrive in commit order: one from the write would come
	// before the marker.
	if _, err := pool.Exec(ctx, `SELECT pg_notify('outbox_mail', 'marker')`); err != nil {
		t.Fatal(err)
	}
	n, err := conn.WaitForNotification(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n.Payload != "marker" {
		t.Fatalf("the write sent a NOTIFY (%q)", n.Payload)
	}
}
