package replier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
)

// Durable is the consumer's base name (contracts.Names.Stream prefixes it).
const Durable = contracts.DurableImportWorkerReplies

// Config of the replier, read from the environment (embed it in the
// binary's Config).
type Config struct {
	Backoff     []string      `env:"REPLY_BACKOFF" default:"1s,5s,30s,2m,10m" desc:"replies by mail: delays before the retries of a reply whose sending failed transiently (throttling, 5xx, network); one attempt more than delays, then the reply fails"`
	SendTimeout time.Duration `env:"REPLY_SEND_TIMEOUT" default:"60s" desc:"replies by mail: time budget of one attempt's Graph call, the client's own 429 retries included; the consumer's AckWait is this plus 30s"`
	Concurrency int           `env:"REPLY_CONCURRENCY" default:"4" desc:"replies by mail: replies one import worker sends at once"`
}

// Schedule returns the parsed REPLY_BACKOFF, or an error naming the
// variable.
func (c Config) Schedule() ([]time.Duration, error) {
	if len(c.Backoff) == 0 {
		return nil, errors.New("config: REPLY_BACKOFF must list at least one delay")
	}
	out := make([]time.Duration, len(c.Backoff))
	for i, s := range c.Backoff {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("config: REPLY_BACKOFF: %q is not a positive duration", s)
		}
		out[i] = d
	}
	return out, nil
}

// Check refuses a configuration the replier cannot run with.
func (c Config) Check() error {
	_, err := c.Schedule()
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	if c.SendTimeout <= 0 {
		errs = append(errs, errors.New("config: REPLY_SEND_TIMEOUT must be positive"))
	}
	if c.Concurrency < 1 {
		errs = append(errs, errors.New("config: REPLY_CONCURRENCY must be at least 1"))
	}
	return errors.Join(errs...)
}

// Options of Start.
type Options struct {
	Config  Config
	Metrics *Metrics // nil counts nothing
	Now     func() time.Time
	Log     *slog.Logger
}

// Consumer is the running replier: a durable consumer of message.reply.sent
// on EVENTS.
type Consumer struct {
	cc     jetstream.ConsumeContext
	base   context.Context
	cancel context.CancelFunc
	slots  chan struct{}
	wg     sync.WaitGroup
	log    *slog.Logger
}

// Start consumes message.reply.sent from EVENTS with the durable consumer
// Durable (explicit ack; a transient failure is redelivered after the next
// REPLY_BACKOFF delay, at most len(REPLY_BACKOFF)+1 deliveries in all) and
// delivers each reply by mail through sender. Call Drain at shutdown,
// before the bus and the store close.
//
// A consumer created for the first time starts at the events published from
// then on: a first deployment does not mail a week of earlier replies (the
// stream's age). It runs REPLY_CONCURRENCY replies at once and pulls no
// more than that ahead, so that no event waits out its AckWait in a buffer.
// The consumer has no BackOff list: JetStream would take its first entry
// (1 s) as the AckWait and redeliver every reply whose Graph call is slower;
// the delays are given with each nak instead.
func Start(ctx context.Context, bus *natsbus.Bus, store Store, sender Sender, opts Options) (*Consumer, error) {
	cfg := opts.Config
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	schedule, _ := cfg.Schedule()
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := NewHandler(store, sender, HandlerOptions{Backoff: schedule, SendTimeout: cfg.SendTimeout, Metrics: opts.Metrics,
		Now: opts.Now, Log: log})
	maxDeliver := len(schedule) + 1
	cons, err := bus.JS.CreateOrUpdateConsumer(ctx, bus.Names.Stream(contracts.StreamEvents), jetstream.ConsumerConfig{
		Durable:       bus.Names.Stream(Durable),
		FilterSubject: bus.Names.Subject(contracts.EventSubject(contracts.EventReplySent)),
		DeliverPolicy: jetstream.DeliverNewPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		// Longer than a claim's lease: a worker that dies mid-call has its
		// event redelivered after the lease ended, and the redelivery sees
		// the stale claim (outcome unknown) instead of waiting on it.
		AckWait:    h.lease + 15*time.Second,
		MaxDeliver: maxDeliver,
	})
	if err != nil {
		return nil, fmt.Errorf("replier: consumer %s: %w", Durable, err)
	}
	base, cancel := context.WithCancel(context.Background())
	c := &Consumer{base: base, cancel: cancel, slots: make(chan struct{}, cfg.Concurrency), log: log}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		c.slots <- struct{}{}
		c.wg.Add(1)
		go func() {
			defer func() { <-c.slots; c.wg.Done() }()
			c.deliver(h, bus.Names, m, schedule, maxDeliver)
		}()
	}, jetstream.PullMaxMessages(cfg.Concurrency))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("replier: consume %s: %w", Durable, err)
	}
	c.cc = cc
	return c, nil
}

// deliver handles one message and acks or naks it, under a consumer span
// that continues the trace of the agent's send-reply request.
func (c *Consumer) deliver(h *Handler, names contracts.Names, m jetstream.Msg, schedule []time.Duration, maxDeliver int) {
	ctx, span := natsbus.StartConsumerSpan(c.base, names, m, names.Stream(Durable))
	var failed error
	defer func() { natsbus.EndSpan(span, failed) }()
	var ev contracts.Event[contracts.ReplySent]
	if err := json.Unmarshal(m.Data(), &ev); err != nil || ev.Type != contracts.EventReplySent {
		failed = errors.New("undecodable reply event")
		c.log.ErrorContext(ctx, "undecodable reply event terminated", "subject", m.Subject(), "type", ev.Type)
		h.metrics.count(OutcomeInvalid)
		_ = m.Term()
		return
	}
	n := 1
	if md, err := m.Metadata(); err == nil && md.NumDelivered > 0 {
		n = int(md.NumDelivered)
	}
	res, err := h.Handle(ctx, ev, Delivery{Number: n, Last: n >= maxDeliver})
	if err != nil {
		failed = err
		delay := schedule[min(n, len(schedule))-1]
		if n >= maxDeliver {
			c.log.ErrorContext(ctx, "reply event given up after its last delivery", "error", err.Error(), "eventID", ev.ID)
		} else {
			c.log.WarnContext(ctx, "reply event will be redelivered", "error", err.Error(), "retryIn", delay)
		}
		_ = m.NakWithDelay(delay)
		return
	}
	if res.RetryIn > 0 {
		_ = m.NakWithDelay(res.RetryIn)
		return
	}
	// A lost ack is harmless: the redelivery finds the reply settled.
	_ = m.Ack()
}

// Drain stops taking events and waits until the replies in hand are sent
// and recorded. When ctx ends first, their contexts are cancelled (an
// attempt cut short stays "sending" until its lease ends, and is then
// failed as outcome unknown) and Drain waits briefly once more.
func (c *Consumer) Drain(ctx context.Context) error {
	c.cc.Drain()
	done := make(chan struct{})
	go func() {
		// Closed once the buffered messages are handed out: no callback
		// adds to wg after it.
		<-c.cc.Closed()
		c.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		c.cancel()
		return nil
	case <-ctx.Done():
	}
	c.cancel()
	select {
	case <-done:
		return fmt.Errorf("replier: replies in hand were cancelled after the shutdown grace: %w", ctx.Err())
	case <-time.After(2 * time.Second):
		return errors.New("replier: replies still in hand after the shutdown grace")
	}
}
