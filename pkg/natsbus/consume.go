package natsbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrPermanent marks a handler failure that redelivery cannot fix; the
// message is terminated instead of retried.
var ErrPermanent = errors.New("permanent failure")

// backoff is the default redelivery schedule of consumers made by Consume
// (ConsumerConfig.BackOff overrides it; see Consume).
var backoff = []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute}

// Consume runs handler for every message of a durable, explicit-ack consumer
// on stream, drained by DrainSubscriptions at shutdown. nil acks; an error naks for redelivery with backoff (bounded by
// MaxDeliver); ErrPermanent or an undecodable payload terminates the message.
// Each message is handled under a consumer span, the child of the span that
// published it (its headers), with its request id in the context.
func Consume[T any](ctx context.Context, b *Bus, stream string, cfg jetstream.ConsumerConfig,
	handler func(ctx context.Context, payload T, msg jetstream.Msg) error) (jetstream.ConsumeContext, error) {
	cfg.AckPolicy = jetstream.AckExplicitPolicy
	// The schedule is applied here, with NakWithDelay, and never given to
	// the server: a consumer with a BackOff list gets BackOff[0] as its ack
	// wait (nats-server replaces AckWait with it), so a handler slower than
	// the first delay would see its message redelivered while it runs.
	schedule := cfg.BackOff
	if schedule == nil {
		schedule = backoff
	}
	cfg.BackOff = nil
	if cfg.MaxDeliver == 0 {
		cfg.MaxDeliver = len(schedule) + 1
	}
	if cfg.AckWait == 0 {
		cfg.AckWait = 30 * time.Second
	}
	cons, err := b.JS.CreateOrUpdateConsumer(ctx, stream, cfg)
	if err != nil {
		return nil, fmt.Errorf("natsbus: consumer %s on %s: %w", cfg.Durable, stream, err)
	}
	b.WatchConsumer(stream, cfg.Durable)
	cc, err := cons.Consume(func(m jetstream.Msg) {
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
		if err := handler(hctx, payload, m); err != nil {
			herr = err
			if errors.Is(err, ErrPermanent) {
				b.log.ErrorContext(hctx, "message terminated", "subject", m.Subject(), "error", err.Error())
				_ = m.Term()
				return
			}
			b.log.WarnContext(hctx, "message will be redelivered", "subject", m.Subject(), "error", err.Error())
			delay := schedule[0]
			if md, err := m.Metadata(); err == nil && md.NumDelivered > 0 {
				delay = schedule[min(int(md.NumDelivered)-1, len(schedule)-1)]
			}
			_ = m.NakWithDelay(delay)
			return
		}
		_ = m.Ack()
	})
	if err != nil {
		return nil, fmt.Errorf("natsbus: consume %s on %s: %w", cfg.Durable, stream, err)
	}
	b.track(nil, cc)
	return cc, nil
}
