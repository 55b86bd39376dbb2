package postgres_test

import (
	"slices"
	"testing"
	"time"

	"supportplatform.dev/pkg/outbox/outboxtest"
	"supportplatform.dev/services/mail/internal/replier"
)

// A transaction that writes an event wakes the relay after its commit (in
// the import worker a NOTIFY to mailingest's relay, sent on its own) and
// sends no NOTIFY itself.
func TestEventWritesWakeTheRelayWithoutNotify(t *testing.T) {
	s, pool := newStore(t)
	listener := outboxtest.Listen(t, pool)
	r := replier.Reply{CustomerID: 7, MessageID: 100, TicketID: 9, ChannelID: 3}
	settle := replier.ClaimRequest{Settle: replier.StatusFailed, Reason: "no address", LeaseUntil: clock.Add(time.Minute)}
	if _, err := s.WithWake(listener.Wake).ClaimReply(t.Context(), r, settle); err != nil {
		t.Fatal(err)
	}
	if got := listener.Wakes(); !slices.Equal(got, []int{1}) {
		t.Fatalf("events visible at each wake %v, want [1]", got)
	}
	listener.NoNotify(t)
}
