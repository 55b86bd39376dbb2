package natsbus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"supportplatform.dev/pkg/clocktest"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/natstest"
)

// scrape gathers reg and returns the value of the series name{labels}, and
// whether it is there.
func scrape(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("scrape failed: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			return value(m), true
		}
	}
	return 0, false
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	return -1
}

// eventually polls cond (moving the clock past the cache each time) until
// it holds or 10 s have passed.
func eventually(t *testing.T, clock *clocktest.Clock, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		clock.Advance(2 * time.Second)
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached; last: %s", what, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type consumerState struct{ pending, ackPending, redelivered float64 }

func (s consumerState) String() string {
	return fmt.Sprintf("pending %v, ack pending %v, redelivered %v", s.pending, s.ackPending, s.redelivered)
}

func state(t *testing.T, reg *prometheus.Registry, stream, consumer string) (consumerState, bool) {
	t.Helper()
	l := map[string]string{"stream": stream, "consumer": consumer}
	p, ok1 := scrape(t, reg, "jetstream_consumer_pending_messages", l)
	a, ok2 := scrape(t, reg, "jetstream_consumer_ack_pending_messages", l)
	r, ok3 := scrape(t, reg, "jetstream_consumer_redelivered_messages", l)
	return consumerState{p, a, r}, ok1 && ok2 && ok3
}

func deliveries(t *testing.T, reg *prometheus.Registry, stream, consumer string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, o := range []string{natsbus.OutcomeAck, natsbus.OutcomeNak, natsbus.OutcomeTerm, natsbus.OutcomeRedelivery} {
		v, ok := scrape(t, reg, "jetstream_consumer_deliveries_total", map[string]string{"stream": stream, "consumer": consumer, "outcome": o})
		if !ok {
			t.Fatalf("jetstream_consumer_deliveries_total{outcome=%q} is not exported", o)
		}
		out[o] = v
	}
	return out
}

// metricsBus is a bus on url whose consumer metrics are read from reg at
// the time of clock, with stream declared for the cm.> subjects that
// publish sends to.
func metricsBus(t *testing.T, url, name, stream string) (*natsbus.Bus, *clocktest.Clock, *prometheus.Registry) {
	t.Helper()
	b := bus(t, url, name)
	clock := clocktest.New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	natsbus.SetNow(b, clock.Now)
	reg := prometheus.NewRegistry()
	if err := reg.Register(b.Collector()); err != nil {
		t.Fatal(err)
	}
	if err := b.EnsureStream(context.Background(), jetstream.StreamConfig{Name: stream, Subjects: []string{"cm.>"}}); err != nil {
		t.Fatal(err)
	}
	return b, clock, reg
}

func publish(t *testing.T, b *natsbus.Bus, names ...string) {
	t.Helper()
	for _, n := range names {
		data, _ := json.Marshal(payload{Name: n})
		if _, err := b.JS.Publish(context.Background(), "cm.work", data); err != nil {
			t.Fatal(err)
		}
	}
}

// The consumer's gauges follow JetStream's view as messages are delivered,
// held, settled and redelivered; the deliveries counter counts how the
// handler settled each; a scrape inside the cache window does not ask
// NATS again.
func TestConsumerMetrics(t *testing.T) {
	const stream, durable = "CM_WORK", "cm-worker"
	b, clock, reg := metricsBus(t, natstest.Start(t), "cm", stream)
	ctx := context.Background()
	// m0 holds the handler until release; "term" is terminated; "nak" is
	// handed back once, and its redelivery holds the handler until release2.
	publish(t, b, "hold", "term", "ok", "nak", "ok", "ok", "ok", "ok", "ok", "ok")
	entered, release := make(chan struct{}), make(chan struct{})
	redelivered, release2 := make(chan struct{}), make(chan struct{})
	cc, err := natsbus.Consume(ctx, b, stream, jetstream.ConsumerConfig{Durable: durable, MaxAckPending: 3,
		BackOff: []time.Duration{20 * time.Millisecond}},
		func(ctx context.Context, p payload, m jetstream.Msg) error {
			md, err := m.Metadata()
			if err != nil {
				return err
			}
			switch {
			case p.Name == "hold":
				close(entered)
				<-release
			case p.Name == "term":
				return fmt.Errorf("bad message: %w", natsbus.ErrPermanent)
			case p.Name == "nak" && md.NumDelivered == 1:
				return errors.New("try again")
			case p.Name == "nak":
				close(redelivered)
				<-release2
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()

	// Before the first message is settled the counters are there at 0.
	<-entered
	if d := deliveries(t, reg, stream, durable); d[natsbus.OutcomeAck] != 0 || d[natsbus.OutcomeRedelivery] != 0 {
		t.Fatalf("deliveries before any settlement: %v", d)
	}
	// Three delivered (the ack-pending limit), seven waiting.
	var s consumerState
	eventually(t, clock, "3 ack pending, 7 pending", func() (bool, string) {
		var ok bool
		s, ok = state(t, reg, stream, durable)
		return ok && s == consumerState{pending: 7, ackPending: 3}, s.String()
	})

	// Within the cache window NATS is not asked again.
	publish(t, b, "ok", "ok", "ok", "ok", "ok")
	if got, _ := state(t, reg, stream, durable); got != s {
		t.Fatalf("a scrape inside the cache window asked NATS: %v, cached %v", got, s)
	}
	clock.Advance(2 * time.Second)
	if got, _ := state(t, reg, stream, durable); got.pending != 12 {
		t.Fatalf("after the cache window: %v, want 12 pending", got)
	}

	close(release)
	select {
	case <-redelivered:
	case <-time.After(10 * time.Second):
		t.Fatal("the nak'd message was not redelivered")
	}
	eventually(t, clock, "one message redelivered and unacknowledged", func() (bool, string) {
		s, ok := state(t, reg, stream, durable)
		return ok && s.redelivered == 1 && s.ackPending >= 1, s.String()
	})
	d := deliveries(t, reg, stream, durable)
	if d[natsbus.OutcomeNak] != 1 || d[natsbus.OutcomeTerm] != 1 || d[natsbus.OutcomeRedelivery] != 1 {
		t.Fatalf("deliveries while the redelivery is held: %v", d)
	}

	close(release2)
	eventually(t, clock, "all settled", func() (bool, string) {
		s, ok := state(t, reg, stream, durable)
		return ok && s == consumerState{}, s.String()
	})
	want := map[string]float64{natsbus.OutcomeAck: 14, natsbus.OutcomeNak: 1, natsbus.OutcomeTerm: 1, natsbus.OutcomeRedelivery: 1}
	if d := deliveries(t, reg, stream, durable); fmt.Sprint(d) != fmt.Sprint(want) {
		t.Fatalf("deliveries: %v, want %v", d, want)
	}
}

// A consumer whose state cannot be read has no gauges and counts an error;
// the scrape succeeds, at once while NATS is down, and the gauges come back
// with NATS.
func TestConsumerMetricsErrors(t *testing.T) {
	srv := natstest.StartServer(t, nil)
	const stream, durable = "CE_WORK", "ce-worker"
	b, clock, reg := metricsBus(t, srv.URL(), "ce", stream)
	ctx := context.Background()
	if _, err := b.JS.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: durable, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	// A consumer declared with the jetstream API is watched explicitly.
	b.WatchConsumer(stream, durable)
	b.WatchConsumer(stream, "gone")
	publish(t, b, "a", "b")
	// The server counts a stored message as pending for a consumer a moment
	// after the publish is acknowledged: wait for it through the API, so the
	// first scrape below (one info request per consumer) sees both.
	cons, err := b.JS.Consumer(ctx, stream, durable)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, clock, "the server counts both messages pending", func() (bool, string) {
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.NumPending == 2, fmt.Sprintf("%d pending", info.NumPending)
	})

	errorsOf := func(consumer string) float64 {
		v, ok := scrape(t, reg, "jetstream_consumer_info_errors_total", map[string]string{"stream": stream, "consumer": consumer})
		if !ok {
			t.Fatalf("no jetstream_consumer_info_errors_total for %s", consumer)
		}
		return v
	}
	if s, ok := state(t, reg, stream, durable); !ok || s.pending != 2 {
		t.Fatalf("watched consumer: %v (exported %v), want 2 pending", s, ok)
	}
	if _, ok := state(t, reg, stream, "gone"); ok {
		t.Fatal("a consumer that does not exist has gauges")
	}
	if n := errorsOf("gone"); n != 1 {
		t.Fatalf("errors of the missing consumer: %v, want 1", n)
	}
	if n := errorsOf(durable); n != 0 {
		t.Fatalf("errors of the readable consumer: %v, want 0", n)
	}

	srv.Stop()
	deadline := time.Now().Add(5 * time.Second)
	for b.NC.IsConnected() {
		if time.Now().After(deadline) {
			t.Fatal("the client did not notice the server stopped")
		}
		time.Sleep(10 * time.Millisecond)
	}
	clock.Advance(2 * time.Second)
	start := time.Now()
	if _, ok := state(t, reg, stream, durable); ok {
		t.Fatal("gauges exported while NATS is down")
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("a scrape while NATS is down took %s", d)
	}
	if n := errorsOf(durable); n != 1 {
		t.Fatalf("errors while NATS is down: %v, want 1", n)
	}

	srv.Start()
	eventually(t, clock, "gauges back after NATS returned", func() (bool, string) {
		s, ok := state(t, reg, stream, durable)
		return ok && s.pending == 2, s.String()
	})
}
