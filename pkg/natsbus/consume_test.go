package natsbus_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/outbox"
)

// publishEvent puts one event on EVENTS.
func publishEvent(t *testing.T, b *natsbus.Bus, name string) {
	t.Helper()
	ctx := context.Background()
	m, err := outbox.Event(ctx, contracts.EventTopicCreated, 7, time.Now(), payload{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.PublishRaw(ctx, m.Subject, m.ID, m.Data); err != nil {
		t.Fatal(err)
	}
}

func eventsBus(t *testing.T, prefix string) (*natsbus.Bus, string) {
	t.Helper()
	url := natstest.Start(t)
	b := bus(t, url, prefix)
	if err := b.EnsureEventsStream(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b, url
}

func within(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// WithConcurrency runs that many handlers at once and no more; the bus's
// DrainSubscriptions waits for all of them, not only for the callback.
func TestConsumeConcurrencyAndDrain(t *testing.T) {
	b, _ := eventsBus(t, "cc")
	const n = 3
	entered, release := make(chan struct{}, n), make(chan struct{})
	var running, most, finished atomic.Int32
	_, err := natsbus.Consume(context.Background(), b, b.Names.Stream(contracts.StreamEvents), jetstream.ConsumerConfig{Durable: "cc"},
		func(ctx context.Context, ev contracts.Event[payload], _ jetstream.Msg) error {
			r := running.Add(1)
			for m := most.Load(); r > m && !most.CompareAndSwap(m, r); m = most.Load() {
			}
			entered <- struct{}{}
			<-release
			running.Add(-1)
			finished.Add(1)
			return nil
		}, natsbus.WithConcurrency(n))
	if err != nil {
		t.Fatal(err)
	}
	// As many messages as slots: no callback waits for a slot, so the
	// subscription's own drain ends at once and only the handlers hold it.
	for i := range n {
		publishEvent(t, b, string(rune('a'+i)))
	}
	for range n {
		within(t, "a handler", entered)
	}
	drained := make(chan error, 1)
	go func() { drained <- b.DrainSubscriptions(context.Background()) }()
	select {
	case err := <-drained:
		t.Fatalf("drain returned while handlers run: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	// Every message taken before the drain was handled before it returned.
	if f := finished.Load(); f != n {
		t.Fatalf("%d handlers finished when the drain returned, want %d", f, n)
	}
	if m := most.Load(); m != n {
		t.Fatalf("%d handlers ran at once, want %d", m, n)
	}
}

// WithProgress keeps a handler slower than the AckWait from seeing its
// message delivered again.
func TestConsumeProgress(t *testing.T) {
	b, _ := eventsBus(t, "pr")
	var calls atomic.Int32
	done := make(chan struct{})
	_, err := natsbus.Consume(context.Background(), b, b.Names.Stream(contracts.StreamEvents),
		jetstream.ConsumerConfig{Durable: "pr", AckWait: 300 * time.Millisecond},
		func(ctx context.Context, ev contracts.Event[payload], _ jetstream.Msg) error {
			if calls.Add(1) == 1 {
				time.Sleep(time.Second) // three AckWaits
				close(done)
			}
			return nil
		}, natsbus.WithProgress(), natsbus.WithConcurrency(2))
	if err != nil {
		t.Fatal(err)
	}
	publishEvent(t, b, "slow")
	within(t, "the slow handler", done)
	if err := b.DrainSubscriptions(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("handled %d times, want 1 (redelivered while running)", n)
	}
}

// RetryIn hands a message back with its own delay, before the schedule's;
// WithRetry keeps the server's BackOff list.
func TestConsumeRetryInAndWithRetry(t *testing.T) {
	b, _ := eventsBus(t, "ri")
	var calls atomic.Int32
	done := make(chan struct{})
	_, err := natsbus.Consume(context.Background(), b, b.Names.Stream(contracts.StreamEvents),
		jetstream.ConsumerConfig{Durable: "ri", AckWait: 10 * time.Second, BackOff: []time.Duration{10 * time.Second, time.Minute}, MaxDeliver: 3},
		func(ctx context.Context, ev contracts.Event[payload], _ jetstream.Msg) error {
			if calls.Add(1) == 1 {
				return natsbus.RetryIn(50 * time.Millisecond)
			}
			close(done)
			return nil
		}, natsbus.WithRetry([]time.Duration{time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	publishEvent(t, b, "later")
	within(t, "the message again after its RetryIn", done)
	info, err := b.JS.Consumer(context.Background(), b.Names.Stream(contracts.StreamEvents), "ri")
	if err != nil {
		t.Fatal(err)
	}
	if cfg := info.CachedInfo().Config; len(cfg.BackOff) != 2 {
		t.Fatalf("server BackOff %v, want the configured list", cfg.BackOff)
	}
	if err := b.DrainSubscriptions(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A handler cut short by shutdown (its context cancelled after the grace)
// hands its message back at once, not after the retry schedule: another
// consumer of the durable gets it.
func TestConsumeShutdownHandsBackAtOnce(t *testing.T) {
	b, url := eventsBus(t, "sd")
	cfg := jetstream.ConsumerConfig{Durable: "sd", AckWait: time.Minute}
	entered := make(chan struct{})
	_, err := natsbus.Consume(context.Background(), b, b.Names.Stream(contracts.StreamEvents), cfg,
		func(ctx context.Context, ev contracts.Event[payload], _ jetstream.Msg) error {
			close(entered)
			<-ctx.Done()
			return ctx.Err()
		}, natsbus.WithRetry([]time.Duration{time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	publishEvent(t, b, "cut")
	within(t, "the handler", entered)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := b.DrainSubscriptions(ctx); err == nil {
		t.Fatal("drain past the grace reported no error")
	}
	other := bus(t, url, "sd")
	again := make(chan struct{})
	var once atomic.Bool
	_, err = natsbus.Consume(context.Background(), other, other.Names.Stream(contracts.StreamEvents), cfg,
		func(ctx context.Context, ev contracts.Event[payload], m jetstream.Msg) error {
			if md, err := m.Metadata(); err == nil && md.NumDelivered == 2 && once.CompareAndSwap(false, true) {
				close(again)
			}
			return nil
		}, natsbus.WithRetry([]time.Duration{time.Hour}))
	if err != nil {
		t.Fatal(err)
	}
	within(t, "the handed-back message on another consumer", again)
	if err := other.DrainSubscriptions(context.Background()); err != nil {
		t.Fatal(err)
	}
}
