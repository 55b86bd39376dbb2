package replier

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// Start consumes message.reply.sent from EVENTS with the durable consumer
// Durable on natsbus.Consume (explicit ack; a transient failure is
// redelivered after the next REPLY_BACKOFF delay, at most
// len(REPLY_BACKOFF)+1 deliveries in all) and delivers each reply by mail
// through sender. The bus's DrainSubscriptions stops it at shutdown, before
// the bus and the store close: the replies in hand are sent and recorded,
// or cancelled after the grace (an attempt cut short stays "sending" until
// its lease ends, and is then failed as outcome unknown).
//
// A consumer created for the first time starts at the events published from
// then on: a first deployment does not mail a week of earlier replies (the
// stream's age). It runs REPLY_CONCURRENCY replies at once and pulls no
// more than that ahead, so that no event waits out its AckWait in a buffer.
// The consumer has no BackOff list: JetStream would take its first entry
// (1 s) as the AckWait and redeliver every reply whose Graph call is slower;
// the delays are given with each nak instead.
func Start(ctx context.Context, bus *natsbus.Bus, store Store, sender Sender, opts Options) error {
	cfg := opts.Config
	if err := cfg.Check(); err != nil {
		return err
	}
	schedule, _ := cfg.Schedule()
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := NewHandler(store, sender, HandlerOptions{Backoff: schedule, SendTimeout: cfg.SendTimeout, Metrics: opts.Metrics,
		Now: opts.Now, Log: log})
	maxDeliver := len(schedule) + 1
	_, err := natsbus.Consume(ctx, bus, bus.Names.Stream(contracts.StreamEvents), jetstream.ConsumerConfig{
		Durable:       bus.Names.Stream(Durable),
		FilterSubject: bus.Names.Subject(contracts.EventSubject(contracts.EventReplySent)),
		DeliverPolicy: jetstream.DeliverNewPolicy,
		// Longer than a claim's lease: a worker that dies mid-call has its
		// event redelivered after the lease ended, and the redelivery sees
		// the stale claim (outcome unknown) instead of waiting on it.
		AckWait:    h.lease + 15*time.Second,
		MaxDeliver: maxDeliver,
	}, func(ctx context.Context, ev contracts.Event[contracts.ReplySent], m jetstream.Msg) error {
		return deliver(ctx, h, ev, m, maxDeliver)
	}, natsbus.WithConcurrency(cfg.Concurrency), natsbus.WithRetry(schedule))
	if err != nil {
		return fmt.Errorf("replier: %w", err)
	}
	return nil
}

// deliver handles one reply event; natsbus.Consume settles its message (a
// lost ack is harmless: the redelivery finds the reply settled).
func deliver(ctx context.Context, h *Handler, ev contracts.Event[contracts.ReplySent], m jetstream.Msg, maxDeliver int) error {
	if ev.Type != contracts.EventReplySent {
		h.metrics.count(OutcomeInvalid)
		return fmt.Errorf("reply event of type %q: %w", ev.Type, natsbus.ErrPermanent)
	}
	n := 1
	if md, err := m.Metadata(); err == nil && md.NumDelivered > 0 {
		n = int(md.NumDelivered)
	}
	res, err := h.Handle(ctx, ev, Delivery{Number: n, Last: n >= maxDeliver})
	if err != nil {
		return err
	}
	if res.RetryIn > 0 {
		return natsbus.RetryIn(res.RetryIn)
	}
	return nil
}
