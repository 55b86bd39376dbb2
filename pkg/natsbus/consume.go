package natsbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrPermanent marks a handler failure that redelivery cannot fix; the
// message is terminated instead of retried.
var ErrPermanent = errors.New("permanent failure")

// backoff is the default redelivery schedule of consumers made by Consume
// (ConsumerConfig.BackOff or WithRetry overrides it; see Consume).
var backoff = []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute}

// RetryIn returns the error a handler gives for a message that is not done
// yet and should come again after d (a reply waiting for its mailbox's
// turn): it is handed back with that delay, neither logged nor counted as a
// failure of the span.
func RetryIn(d time.Duration) error { return retryIn(d) }

type retryIn time.Duration

func (r retryIn) Error() string { return fmt.Sprintf("natsbus: retry in %v", time.Duration(r)) }

// ConsumeOption adds to Consume's defaults what a consumer needs.
type ConsumeOption func(*consumeOptions)

type consumeOptions struct {
	concurrency int
	progress    bool
	retry       []time.Duration
}

// WithConcurrency handles up to n messages at once, and pulls no more than
// n ahead, so that no message waits out its AckWait in a buffer (1: one by
// one, pulled one at a time). Without it messages are handled one by one
// from the client's default buffer.
func WithConcurrency(n int) ConsumeOption { return func(o *consumeOptions) { o.concurrency = n } }

// WithProgress confirms progress (an in-progress ack) every third of the
// AckWait while a handler runs, so that a long handler's message is not
// delivered again meanwhile.
func WithProgress() ConsumeOption { return func(o *consumeOptions) { o.progress = true } }

// WithRetry gives the delays before a failed message comes again, by its
// delivery count (the last repeats). ConsumerConfig.BackOff is then given
// to the server as it is: it applies to messages nobody settled (a replica
// died), its first step replacing AckWait.
func WithRetry(schedule []time.Duration) ConsumeOption {
	return func(o *consumeOptions) { o.retry = schedule }
}

// Consume runs handler for every message of a durable, explicit-ack consumer
// on stream, drained by DrainSubscriptions at shutdown (which waits for the
// handlers in hand, and cancels their context after the grace). nil acks;
// an error naks for redelivery with backoff (bounded by MaxDeliver; the last
// delivery's failure is logged as given up); RetryIn naks with its delay;
// a handler cut short by shutdown (its context cancelled) naks at once, for
// another replica or the next start; ErrPermanent or an undecodable payload
// terminates the message. Each message is handled under a consumer span,
// the child of the span that published it (its headers), with its request
// id in the context, and counted on /metrics (jetstream_consumer_*).
func Consume[T any](ctx context.Context, b *Bus, stream string, cfg jetstream.ConsumerConfig,
	handler func(ctx context.Context, payload T, msg jetstream.Msg) error, opts ...ConsumeOption) (jetstream.ConsumeContext, error) {
	var o consumeOptions
	for _, opt := range opts {
		opt(&o)
	}
	cfg.AckPolicy = jetstream.AckExplicitPolicy
	// Without WithRetry the schedule is cfg.BackOff, applied here with
	// NakWithDelay and never given to the server: a consumer with a BackOff
	// list gets BackOff[0] as its ack wait (nats-server replaces AckWait
	// with it), so a handler slower than the first delay would see its
	// message redelivered while it runs.
	schedule := o.retry
	if schedule == nil {
		schedule = cfg.BackOff
		cfg.BackOff = nil
	}
	if schedule == nil {
		schedule = backoff
	}
	if cfg.MaxDeliver == 0 {
		cfg.MaxDeliver = len(schedule) + 1
	}
	if cfg.AckWait == 0 {
		cfg.AckWait = 30 * time.Second
	}
	var cons jetstream.Consumer
	err := RetryTransient(ctx, b.log, "consumer "+cfg.Durable+" on "+stream, func(ctx context.Context) error {
		var err error
		cons, err = b.JS.CreateOrUpdateConsumer(ctx, stream, cfg)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("natsbus: consumer %s on %s: %w", cfg.Durable, stream, err)
	}
	b.WatchConsumer(stream, cfg.Durable)
	handle := func(m jetstream.Msg) {
		m = b.countDelivery(stream, cfg.Durable, m)
		hctx, span := StartConsumerSpan(b.ctx, b.Names, m, cfg.Durable)
		var herr error
		defer func() { EndSpan(span, herr) }()
		var payload T
		if err := json.Unmarshal(m.Data(), &payload); err != nil {
			herr = err
			b.log.ErrorContext(hctx, "undecodable message terminated", "subject", m.Subject(), "error", err.Error())
			_ = m.Term()
			return
		}
		if o.progress {
			stop := confirmProgress(m, cfg.AckWait/3)
			defer stop()
		}
		err := handler(hctx, payload, m)
		settle(hctx, b, m, err, &herr, schedule, cfg.MaxDeliver)
	}
	var pull []jetstream.PullConsumeOpt
	var inHand sync.WaitGroup
	cb := handle
	if o.concurrency > 0 {
		pull = append(pull, jetstream.PullMaxMessages(o.concurrency))
	}
	if o.concurrency > 1 {
		slots := make(chan struct{}, o.concurrency)
		cb = func(m jetstream.Msg) {
			slots <- struct{}{}
			inHand.Add(1)
			go func() {
				defer func() { <-slots; inHand.Done() }()
				handle(m)
			}()
		}
	}
	cc, err := cons.Consume(cb, pull...)
	if err != nil {
		return nil, fmt.Errorf("natsbus: consume %s on %s: %w", cfg.Durable, stream, err)
	}
	w := &consumeContext{ConsumeContext: cc, closed: make(chan struct{})}
	go func() {
		// Closed once the buffered messages are handed out: no callback
		// adds to inHand after it.
		<-cc.Closed()
		inHand.Wait()
		close(w.closed)
	}()
	b.track(nil, w)
	return w, nil
}

// settle acks, naks or terminates m after its handler returned err.
func settle(ctx context.Context, b *Bus, m jetstream.Msg, err error, herr *error, schedule []time.Duration, maxDeliver int) {
	var later retryIn
	switch {
	case err == nil:
		_ = m.Ack()
	case errors.As(err, &later):
		_ = m.NakWithDelay(time.Duration(later))
	case errors.Is(err, ErrPermanent):
		*herr = err
		b.log.ErrorContext(ctx, "message terminated", "subject", m.Subject(), "error", err.Error())
		_ = m.Term()
	case ctx.Err() != nil:
		*herr = err
		b.log.WarnContext(ctx, "shutdown: message handed back", "subject", m.Subject(), "error", err.Error())
		_ = m.Nak()
	default:
		*herr = err
		n := 1
		if md, err := m.Metadata(); err == nil && md.NumDelivered > 0 {
			n = int(md.NumDelivered)
		}
		delay := schedule[min(n, len(schedule))-1]
		if maxDeliver > 0 && n >= maxDeliver {
			b.log.ErrorContext(ctx, "message given up after its last delivery", "subject", m.Subject(), "deliveries", n, "error", err.Error())
		} else {
			b.log.WarnContext(ctx, "message will be redelivered", "subject", m.Subject(), "retryIn", delay, "error", err.Error())
		}
		_ = m.NakWithDelay(delay)
	}
}

// confirmProgress sends m's in-progress ack every interval until the
// returned stop is called.
func confirmProgress(m jetstream.Msg, every time.Duration) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(max(every, time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				_ = m.InProgress()
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// consumeContext is a ConsumeContext whose Closed channel closes only when
// the handlers in hand have returned too, so that DrainSubscriptions waits
// for them.
type consumeContext struct {
	jetstream.ConsumeContext
	closed chan struct{}
}

func (c *consumeContext) Closed() <-chan struct{} { return c.closed }
