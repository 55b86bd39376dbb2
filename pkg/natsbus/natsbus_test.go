package natsbus_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/outbox"
	"supportplatform.dev/pkg/requestid"
)

func bus(t *testing.T, url, prefix string) *natsbus.Bus {
	t.Helper()
	b, err := natsbus.Connect(url, "test", contracts.Names{Prefix: prefix}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.NC.Close() })
	return b
}

type echoReq struct{ N int }
type echoResp struct{ Double int }

func TestRequestReply(t *testing.T) {
	url := natstest.Start(t)
	srv, cli := bus(t, url, "p1"), bus(t, url, "p1")
	var sawID atomic.Value
	_, err := natsbus.Serve(srv, "rpc.echo", "q", func(ctx context.Context, r echoReq) (echoResp, error) {
		sawID.Store(requestid.From(ctx))
		switch r.N {
		case -1:
			return echoResp{}, apperr.E(apperr.NotFound, "no such thing")
		case -2:
			return echoResp{}, errors.New("db password leaked")
		}
		return echoResp{Double: 2 * r.N}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := requestid.With(context.Background(), "rid-1")
	got, err := natsbus.Request[echoReq, echoResp](ctx, cli, "rpc.echo", echoReq{N: 21})
	if err != nil || got.Double != 42 {
		t.Fatalf("%+v %v", got, err)
	}
	if sawID.Load() != "rid-1" {
		t.Fatalf("request id not carried: %v", sawID.Load())
	}
	_, err = natsbus.Request[echoReq, echoResp](ctx, cli, "rpc.echo", echoReq{N: -1})
	if !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("app error not carried: %v", err)
	}
	_, err = natsbus.Request[echoReq, echoResp](ctx, cli, "rpc.echo", echoReq{N: -2})
	if !apperr.Is(err, apperr.Internal) || err.(*apperr.Error).Message == "db password leaked" {
		t.Fatalf("internal error: %v", err)
	}
	// Another prefix is another deployment: nobody answers there.
	other := bus(t, url, "p2")
	_, err = natsbus.Request[echoReq, echoResp](ctx, other, "rpc.echo", echoReq{N: 1})
	if !apperr.Is(err, apperr.Unavailable) {
		t.Fatalf("no responder: %v", err)
	}
}

type payload struct{ Name string }

func TestEventsPublishConsume(t *testing.T) {
	url := natstest.Start(t)
	b := bus(t, url, "ev")
	ctx := context.Background()
	if err := b.EnsureEventsStream(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.EnsureEventsStream(ctx); err != nil {
		t.Fatalf("second declaration must be idempotent: %v", err)
	}
	got := make(chan contracts.Event[payload], 10)
	var attempts atomic.Int32
	cc, err := natsbus.Consume(ctx, b, b.Names.Stream(contracts.StreamEvents), jetstream.ConsumerConfig{Durable: "t", BackOff: []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}},
		func(ctx context.Context, ev contracts.Event[payload], _ jetstream.Msg) error {
			if ev.Data.Name == "retry" && attempts.Add(1) == 1 {
				return errors.New("transient")
			}
			got <- ev
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	for _, n := range []string{"a", "retry"} {
		m, err := outbox.Event(ctx, contracts.EventTopicCreated, 7, time.Now(), payload{Name: n})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.PublishRaw(ctx, m.Subject, m.ID, m.Data); err != nil {
			t.Fatal(err)
		}
		// The same message id again: the stream's duplicate window drops it.
		if err := b.PublishRaw(ctx, m.Subject, m.ID, m.Data); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for len(seen) < 2 {
		select {
		case ev := <-got:
			if ev.Type != contracts.EventTopicCreated || ev.CustomerID != 7 || ev.ID == "" {
				t.Fatalf("envelope: %+v", ev)
			}
			seen[ev.Data.Name] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("events not delivered: %v", seen)
		}
	}
	select {
	case ev := <-got:
		t.Fatalf("a duplicate publish was delivered: %+v", ev)
	case <-time.After(200 * time.Millisecond):
	}
	if attempts.Load() != 2 {
		t.Fatalf("failed message should be redelivered once, attempts=%d", attempts.Load())
	}
	info, err := b.JS.Stream(ctx, "EV_EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	if subj := info.CachedInfo().Config.Subjects[0]; subj != "ev.events.>" {
		t.Fatalf("prefixed subject: %s", subj)
	}
}

// DrainSubscriptions waits for handlers already running, which finish with
// a live context and get their reply out; nothing new is taken meanwhile.
func TestDrainSubscriptionsWaitsForInFlightHandlers(t *testing.T) {
	url := natstest.Start(t)
	srv, cli := bus(t, url, "dr"), bus(t, url, "dr")
	entered, release := make(chan struct{}, 10), make(chan struct{})
	var finished atomic.Int32
	if _, err := natsbus.Serve(srv, "rpc.slow", "q", func(ctx context.Context, r echoReq) (echoResp, error) {
		entered <- struct{}{}
		<-release
		if ctx.Err() != nil {
			return echoResp{}, ctx.Err()
		}
		finished.Add(1)
		return echoResp{Double: 2 * r.N}, nil
	}); err != nil {
		t.Fatal(err)
	}
	const n = 3
	replies := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			r, err := natsbus.Request[echoReq, echoResp](context.Background(), cli, "rpc.slow", echoReq{N: 21})
			if err == nil && r.Double != 42 {
				err = errors.New("wrong reply")
			}
			replies <- err
		}()
	}
	for i := 0; i < n; i++ {
		select {
		case <-entered:
		case <-time.After(5 * time.Second):
			t.Fatal("handlers did not start")
		}
	}
	drained := make(chan error, 1)
	go func() { drained <- srv.DrainSubscriptions(context.Background()) }()
	select {
	case err := <-drained:
		t.Fatalf("drain returned while handlers run: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	if finished.Load() != n {
		t.Fatalf("%d handlers finished before drain returned, want %d", finished.Load(), n)
	}
	for i := 0; i < n; i++ {
		if err := <-replies; err != nil {
			t.Fatalf("in-flight request: %v", err)
		}
	}
	if err := srv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !srv.NC.IsClosed() {
		t.Fatal("connection not closed after Close")
	}
}

// A handler that outlives the grace gets its context cancelled.
func TestDrainSubscriptionsCancelsAfterGrace(t *testing.T) {
	url := natstest.Start(t)
	srv, cli := bus(t, url, "gr"), bus(t, url, "gr")
	entered, sawCancel := make(chan struct{}), make(chan struct{})
	if _, err := natsbus.Serve(srv, "rpc.stuck", "q", func(ctx context.Context, r echoReq) (echoResp, error) {
		close(entered)
		<-ctx.Done()
		close(sawCancel)
		return echoResp{}, ctx.Err()
	}); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = natsbus.Request[echoReq, echoResp](context.Background(), cli, "rpc.stuck", echoReq{}) }()
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("handler did not start")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := srv.DrainSubscriptions(ctx); err == nil {
		t.Fatal("drain past the grace reported no error")
	}
	select {
	case <-sawCancel:
	case <-time.After(time.Second):
		t.Fatal("handler context not cancelled after the grace")
	}
}

// A handler slower than the first redelivery delay keeps its message: the
// schedule is not the server's BackOff (which would become the ack wait).
func TestSlowHandlerIsNotRedeliveredWhileItRuns(t *testing.T) {
	url := natstest.Start(t)
	b := bus(t, url, "slow")
	ctx := context.Background()
	if err := b.EnsureEventsStream(ctx); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	done := make(chan struct{})
	cc, err := natsbus.Consume(ctx, b, b.Names.Stream(contracts.StreamEvents),
		jetstream.ConsumerConfig{Durable: "slow", BackOff: []time.Duration{200 * time.Millisecond}, AckWait: 5 * time.Second},
		func(ctx context.Context, ev contracts.Event[payload], _ jetstream.Msg) error {
			if calls.Add(1) == 1 {
				time.Sleep(time.Second)
				close(done)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	info, err := b.JS.Consumer(ctx, b.Names.Stream(contracts.StreamEvents), "slow")
	if err != nil {
		t.Fatal(err)
	}
	if cfg := info.CachedInfo().Config; len(cfg.BackOff) != 0 || cfg.AckWait != 5*time.Second || cfg.MaxDeliver != 2 {
		t.Fatalf("consumer config: backoff %v, ack wait %s, max deliver %d", cfg.BackOff, cfg.AckWait, cfg.MaxDeliver)
	}
	m, err := outbox.Event(ctx, contracts.EventTopicCreated, 7, time.Now(), payload{Name: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.PublishRaw(ctx, m.Subject, m.ID, m.Data); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("not delivered")
	}
	// The server's own count settles once the ack is in: any redelivery
	// made while the handler ran is a second delivery there.
	for deadline := time.Now().Add(5 * time.Second); ; {
		ci, err := info.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ci.NumAckPending == 0 && ci.NumPending == 0 {
			if ci.Delivered.Consumer != 1 || ci.NumRedelivered != 0 {
				t.Fatalf("delivered %d times (%d redelivered), want once", ci.Delivered.Consumer, ci.NumRedelivered)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ack never arrived: %d pending acks", ci.NumAckPending)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("handled %d times, want 1 (redelivered while running)", n)
	}
}
