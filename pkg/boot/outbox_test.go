package boot

import (
	"testing"

	"supportplatform.dev/pkg/outbox/outboxtest"
)

// A binary that relays its schema's outbox wakes its own relay (no
// NOTIFY); a binary that writes to a schema another binary relays (the
// assistant) wakes that relay with a NOTIFY on the schema's channel.
func TestOutboxWake(t *testing.T) {
	open := opener(t)
	deps := map[bool]*Deps{}
	for _, relays := range []bool{true, false} {
		d, err := open(map[string]string{}, Options{Service: "waketest", Outbox: relays})
		if err != nil {
			t.Fatal(err)
		}
		if d.OutboxWake == nil {
			t.Fatalf("Outbox %v: no outbox wake", relays)
		}
		deps[relays] = d
	}
	listener := outboxtest.Listen(t, deps[false].DB)
	deps[true].OutboxWake()
	listener.NoNotify(t)
	deps[false].OutboxWake()
	if p := listener.Next(t); p != "" {
		t.Fatalf("first notification after the wake of the binary without a relay %q, want its NOTIFY", p)
	}
	listener.NoNotify(t)
}
