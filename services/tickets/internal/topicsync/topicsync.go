// Package topicsync keeps the topic names of the tickets context current:
// a durable JetStream consumer on EVENTS applies topic.updated (the new
// name) and topic.deleted (the topic leaves every message and is never
// assigned again) to the store. Handling an event twice, or an older event
// after a newer one, changes nothing.
package topicsync

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
)

// Durable is the consumer's base name (contracts.Names.Stream prefixes it).
const Durable = contracts.DurableTicketsTopics

// Store is what the consumer changes.
type Store interface {
	RenameTopic(ctx context.Context, customerID, topicID int64, name string, at time.Time) error
	ForgetTopic(ctx context.Context, customerID, topicID int64, at time.Time) error
}

// Start consumes the topic events on EVENTS until the bus drains its
// consumers at shutdown. NATS 2.9 takes one filter subject per consumer,
// so it reads every events.topic.> event and ignores the other types.
func Start(ctx context.Context, bus *natsbus.Bus, store Store) error {
	_, err := natsbus.Consume(ctx, bus, bus.Names.Stream(contracts.StreamEvents), jetstream.ConsumerConfig{
		Durable:       bus.Names.Stream(Durable),
		FilterSubject: bus.Names.Subject(contracts.EventSubject("topic.>")),
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}, func(ctx context.Context, ev contracts.Event[json.RawMessage], _ jetstream.Msg) error {
		return Handle(ctx, store, ev)
	})
	return err
}

// Handle applies one event; types other than topic.updated and
// topic.deleted are ignored, and so is an event without a customer or topic.
func Handle(ctx context.Context, store Store, ev contracts.Event[json.RawMessage]) error {
	if ev.Type != contracts.EventTopicUpdated && ev.Type != contracts.EventTopicDeleted {
		return nil
	}
	var data contracts.TopicChanged
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		return fmt.Errorf("%w: %s data: %v", natsbus.ErrPermanent, ev.Type, err)
	}
	if ev.CustomerID <= 0 || data.TopicID <= 0 {
		return nil
	}
	if ev.Type == contracts.EventTopicDeleted {
		return store.ForgetTopic(ctx, ev.CustomerID, data.TopicID, ev.OccurredAt)
	}
	return store.RenameTopic(ctx, ev.CustomerID, data.TopicID, data.Name, ev.OccurredAt)
}
