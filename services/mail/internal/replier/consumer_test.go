package replier_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/services/mail/internal/mail"
	"supportplatform.dev/services/mail/internal/postgres"
	"supportplatform.dev/services/mail/internal/replier"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The consumer on a real JetStream server, connected as the import worker's
// NATS user: a reply event published on EVENTS is sent once and acked; the
// same reply published again (another event id) sends nothing more; a
// transient failure is redelivered after the configured delay and then
// sent; a slow send is not redelivered while it runs.
func TestConsumerOnJetStream(t *testing.T) {
	e := newEnv(t)
	names := contracts.Names{Prefix: "t" + randid.Hex(4)}
	urls := natstest.StartWithUsers(t, names)
	log := slog.New(slog.DiscardHandler)
	ctx := context.Background()

	harness, err := natsbus.Connect(urls[contracts.HarnessUser], "harness", names, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = harness.Close(context.Background()) })
	if err := harness.EnsureEventsStream(ctx); err != nil {
		t.Fatal(err)
	}
	bus, err := natsbus.Connect(urls["importreply"], "importreply", names, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close(context.Background()) })

	reg := prometheus.NewRegistry()
	metrics, err := replier.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeSender{script: []error{nil, sendErr(replier.ErrThrottled, "status 503 ServiceUnavailable")}}
	err = replier.Start(ctx, bus, postgres.New(e.pool, time.Now), s, replier.Options{
		Config:  replier.Config{Backoff: []string{"300ms", "300ms"}, SendTimeout: 5 * time.Second, Concurrency: 2},
		Metrics: metrics, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	drained := false
	t.Cleanup(func() {
		if !drained {
			_ = bus.DrainSubscriptions(context.Background())
		}
	})

	publish := func(ev contracts.Event[contracts.ReplySent]) {
		t.Helper()
		ev.ID = randid.Hex(16)
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if err := harness.PublishRaw(ctx, contracts.EventSubject(contracts.EventReplySent), ev.ID, data); err != nil {
			t.Fatal(err)
		}
	}
	consumer, err := harness.JS.Consumer(ctx, names.Stream(contracts.StreamEvents), names.Stream(replier.Durable))
	if err != nil {
		t.Fatal(err)
	}
	settled := func(acked uint64) func() bool {
		return func() bool {
			info, err := consumer.Info(ctx)
			return err == nil && info.NumAckPending == 0 && info.NumPending == 0 && info.AckFloor.Stream == acked
		}
	}

	ev := e.event("mail", 800, nil)
	publish(ev)
	waitFor(t, "the first reply to be sent and acked", settled(1))
	if calls := s.sent(); len(calls) != 1 || calls[0].Mail.Headers[mail.HeaderReply] != "11.800" {
		t.Fatalf("sent %+v", calls)
	}
	if rec := e.record(t, 800); rec.Status != replier.StatusSent {
		t.Fatalf("record %+v", rec)
	}

	// The same reply again, as a republished event: acked, nothing sent.
	publish(ev)
	waitFor(t, "the duplicate to be acked", settled(2))
	if n := len(s.sent()); n != 1 {
		t.Fatalf("%d sends after the duplicate", n)
	}

	// 503 on the first attempt, redelivered after 300 ms, then sent.
	publish(e.event("mail", 801, nil))
	waitFor(t, "the retried reply to be sent and acked", settled(3))
	if rec := e.record(t, 801); rec.Status != replier.StatusSent || rec.Attempts != 2 {
		t.Fatalf("record %+v", rec)
	}
	if n := len(s.sent()); n != 3 {
		t.Fatalf("%d sends", n)
	}
	// A Graph call slower than a second is not redelivered meanwhile (a
	// consumer BackOff list would make its first delay the AckWait).
	s.mu.Lock()
	s.slow = 1500 * time.Millisecond
	s.mu.Unlock()
	publish(e.event("mail", 802, nil))
	waitFor(t, "the slow reply to be sent and acked", settled(4))
	if n := len(s.sent()); n != 4 {
		t.Fatalf("%d sends", n)
	}
	for outcome, want := range map[string]float64{replier.OutcomeSent: 3, replier.OutcomeDuplicate: 1, replier.OutcomeRetry: 1,
		replier.OutcomeFailed: 0, replier.OutcomeBusy: 0} {
		if got := replies(t, reg, outcome); got != want {
			t.Errorf("mail_replies_total{outcome=%q} = %v, want %v", outcome, got, want)
		}
	}

	drained = true
	if err := bus.DrainSubscriptions(ctx); err != nil {
		t.Fatal(err)
	}
}

// replies reads mail_replies_total{outcome} from reg.
func replies(t *testing.T, reg *prometheus.Registry, outcome string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "mail_replies_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no mail_replies_total{outcome=%q}", outcome)
	return 0
}
