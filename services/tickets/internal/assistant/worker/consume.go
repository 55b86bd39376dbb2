package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
)

// The durable consumers on EVENTS (base names; Names.Stream prefixes
// them). NATS 2.9 takes one filter subject per consumer, so each event
// type has its own.
const (
	DurableMessages = contracts.DurableAssistantMessages
	DurableDetect   = contracts.DurableAssistantDetect
)

// BackOff is the default redelivery schedule: an engine or store outage
// delays the work by up to about three hours before the event is given up
// (logged). The llm engine falls back to the offline one, so engine
// errors are rare; store and NATS failures are what this waits out.
var BackOff = []time.Duration{2 * time.Second, 10 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute,
	30 * time.Minute, time.Hour, time.Hour}

// ConsumerOptions configure Start.
type ConsumerOptions struct {
	// Concurrency is how many events of each consumer are handled at once
	// (default 1).
	Concurrency int
	// AckWait is how long a handling may go without a sign of life (each
	// engine call starts with one) before JetStream redelivers the event:
	// longer than one engine call with its retries. Each handling is also
	// bounded by it. Default 5 minutes.
	AckWait time.Duration
	// BackOff is the redelivery schedule (default BackOff); one delivery
	// more than delays, then the event is given up.
	BackOff []time.Duration
}

// Start consumes ticket.message.created (DurableMessages) and
// ticket.message.topic-detection.requested (DurableDetect) from EVENTS
// until the bus drains its consumers. Each consumer is consumed
// o.Concurrency times in parallel.
func Start(ctx context.Context, bus *natsbus.Bus, w *Worker, o ConsumerOptions) error {
	if o.Concurrency < 1 {
		o.Concurrency = 1
	}
	if o.AckWait <= 0 {
		o.AckWait = handleTimeout
	}
	if o.BackOff == nil {
		o.BackOff = BackOff
	}
	stream := bus.Names.Stream(contracts.StreamEvents)
	config := func(durable, eventType string) jetstream.ConsumerConfig {
		return jetstream.ConsumerConfig{
			Durable:       bus.Names.Stream(durable),
			FilterSubject: bus.Names.Subject(contracts.EventSubject(eventType)),
			// Messages written before the first start are worked on too.
			DeliverPolicy: jetstream.DeliverAllPolicy,
			AckWait:       o.AckWait,
			BackOff:       o.BackOff,
			MaxAckPending: 4 * o.Concurrency,
		}
	}
	for range o.Concurrency {
		if _, err := natsbus.Consume(ctx, bus, stream, config(DurableMessages, contracts.EventMessageCreated),
			func(ctx context.Context, ev contracts.Event[contracts.MessageChanged], msg jetstream.Msg) error {
				ctx, cancel := context.WithTimeout(ctx, o.AckWait)
				defer cancel()
				return w.HandleMessageCreated(ctx, ev, inProgress(msg))
			}); err != nil {
			return fmt.Errorf("assistant: %w", err)
		}
		if _, err := natsbus.Consume(ctx, bus, stream, config(DurableDetect, contracts.EventTopicDetectionRequested),
			func(ctx context.Context, ev contracts.Event[contracts.TopicDetectionRequested], msg jetstream.Msg) error {
				ctx, cancel := context.WithTimeout(ctx, o.AckWait)
				defer cancel()
				return w.HandleDetectionRequested(ctx, ev, inProgress(msg))
			}); err != nil {
			return fmt.Errorf("assistant: %w", err)
		}
	}
	return nil
}

func inProgress(msg jetstream.Msg) func() {
	return func() { _ = msg.InProgress() }
}
