package mailin

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// DeliveryDurable is the consumer of the reply delivery reports.
const DeliveryDurable = contracts.DurableTicketsReplyDelivery

// DeliveryStore records the delivery state of agent replies.
type DeliveryStore interface {
	// SetDelivery applies a report unless a newer one was applied; false
	// when it changed nothing.
	SetDelivery(ctx context.Context, customerID, messageID int64, d tickets.Delivery) (bool, error)
}

// StartDelivery consumes message.reply.delivered and message.reply.failed
// from EVENTS until the bus drains its consumers. NATS 2.9 takes one
// filter subject per consumer: it reads events.message.reply.> and
// ignores message.reply.sent.
func StartDelivery(ctx context.Context, bus *natsbus.Bus, store DeliveryStore) error {
	_, err := natsbus.Consume(ctx, bus, bus.Names.Stream(contracts.StreamEvents), jetstream.ConsumerConfig{
		Durable:       bus.Names.Stream(DeliveryDurable),
		FilterSubject: bus.Names.Subject(contracts.EventSubject("message.reply.>")),
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}, func(ctx context.Context, ev contracts.Event[json.RawMessage], _ jetstream.Msg) error {
		return HandleDelivery(ctx, store, ev)
	})
	return err
}

// HandleDelivery applies one report: delivered makes the reply's delivery
// sent, failed makes it failed, with the attempts and last error the
// report gives, dated by its occurredAt (an older report than the one
// applied changes nothing). Other event types, and reports without a
// customer or message, are ignored.
func HandleDelivery(ctx context.Context, store DeliveryStore, ev contracts.Event[json.RawMessage]) error {
	var status string
	switch ev.Type {
	case contracts.EventReplyDelivered:
		status = tickets.DeliverySent
	case contracts.EventReplyFailed:
		status = tickets.DeliveryFailed
	default:
		return nil
	}
	var data contracts.ReplyDelivery
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		return fmt.Errorf("%w: %s data: %v", natsbus.ErrPermanent, ev.Type, err)
	}
	if ev.CustomerID <= 0 || data.MessageID <= 0 {
		return nil
	}
	d := tickets.Delivery{Status: status, Attempts: max(data.Attempts, 0), UpdatedAt: ev.OccurredAt.UTC()}
	if status == tickets.DeliveryFailed {
		d.Error = cut(line(data.Error), 2000)
	}
	_, err := store.SetDelivery(ctx, ev.CustomerID, data.MessageID, d)
	return err
}
