package postgres_test

import (
	"slices"
	"testing"
	"time"

	"supportplatform.dev/pkg/outbox/outboxtest"
)

// The transactions that write an event wake the relay after their commit
// (a reset request for an unknown address too, like a known one's) and
// send no NOTIFY, whose lock would serialise the commits of every writer.
func TestEventWritesWakeTheRelayWithoutNotify(t *testing.T) {
	s, db := newStore(t)
	_, a := bootstrap(t, s, "Acme", "admin@acme.test")
	listener := outboxtest.Listen(t, db)
	s = s.WithWake(listener.Wake)
	for _, email := range []string{"nobody@acme.test", a.Email} {
		if err := s.RequestPasswordReset(t.Context(), email, resetFor("tok-"+email, t0)); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // the second finds the token spent
		_, _ = s.ResetPassword(t.Context(), hash("tok-"+a.Email), t0.Add(time.Minute), "new-hash")
	}
	if got := listener.Wakes(); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("events visible at each wake %v, want [0 1 2] (after each commit, none after a failure)", got)
	}
	listener.NoNotify(t)
}
