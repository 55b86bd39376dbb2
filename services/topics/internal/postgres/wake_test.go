package postgres_test

import (
	"slices"
	"testing"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/outbox/outboxtest"
	"supportplatform.dev/services/topics/internal/topics"
)

// A change wakes the relay after its commit and sends no NOTIFY, whose
// lock would serialise the commits of every writer.
func TestChangesWakeTheRelayWithoutNotify(t *testing.T) {
	s, pool := newStoreAndPool(t)
	listener := outboxtest.Listen(t, pool)
	s = s.WithWake(listener.Wake)
	mustTopic(t, s, tenantA, "Billing")
	_, err := s.UpdateTopic(t.Context(), tenantA, 999, topics.TopicInput{Name: "Shipping"})
	wantCode(t, err, apperr.NotFound)
	if got := listener.Wakes(); !slices.Equal(got, []int{1}) {
		t.Fatalf("events visible at each wake %v, want [1] (after the commit, none after a failure)", got)
	}
	listener.NoNotify(t)
}
