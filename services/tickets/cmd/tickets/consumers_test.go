package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/servicetest"
)

// SIGTERM while each consumer of the binary (topic names, imported mails,
// reply delivery reports) holds a message in its handler, waiting on a
// lock in PostgreSQL: each message is applied once, before run returns or,
// when the handlers outlast the grace, by the next run.
func TestSIGTERMWithAMessageInEachConsumer(t *testing.T) {
	const customer, channel, topic = 5, 31, 7
	var reply int64 // the agent's message the delivery report is about
	publish := func(subject, id string, v any) func(context.Context, *natsbus.Bus) error {
		return func(ctx context.Context, b *natsbus.Bus) error {
			data, err := json.Marshal(v)
			if err != nil {
				return err
			}
			return b.PublishRaw(ctx, subject, id, data)
		}
	}
	event := func(typ string, data any) func(context.Context, *natsbus.Bus) error {
		return func(ctx context.Context, b *natsbus.Bus) error {
			ev := contracts.Event[any]{ID: "ev-" + typ, Type: typ, CustomerID: customer, OccurredAt: time.Now(), Data: data}
			return publish(contracts.EventSubject(typ), ev.ID, ev)(ctx, b)
		}
	}
	count := func(query string, args ...any) func(context.Context, *pgx.Conn) (int, error) {
		return func(ctx context.Context, db *pgx.Conn) (int, error) {
			var n int
			err := db.QueryRow(ctx, query, args...).Scan(&n)
			return n, err
		}
	}
	servicetest.ConsumerShutdownTest(t, servicetest.ConsumerShutdownCase{
		Name:    "tickets",
		Run:     run,
		Options: servicetest.Options{Env: map[string]string{"TICKET_REF_SECRET": refSecret}},
		// The mail service's answer about the mail's channel.
		Serve: func(c *servicetest.RPCClient) error {
			_, err := natsbus.Serve(c.Bus, contracts.RPCChannel, contracts.QueueMail,
				func(_ context.Context, r contracts.ChannelRequest) (contracts.ChannelReply, error) {
					return contracts.ChannelReply{Exists: r.CustomerID == customer && r.ChannelID == channel, ChannelID: r.ChannelID,
						Name: "support", Kind: "email", EmailAddress: "support@contoso.com"}, nil
				})
			return err
		},
		Setup: func(t *testing.T, db *pgx.Conn) {
			if err := db.QueryRow(context.Background(), `WITH u AS (INSERT INTO tickets.end_users (customer_id, name, email)
				VALUES ($1, 'Ada', 'ada@fabrikam.com') RETURNING end_user_id),
				t AS (INSERT INTO tickets.tickets (customer_id, end_user_id, subject, status, channel_id, ticket_token)
				SELECT $1, end_user_id, 'Printer', 'Open', 9, 'token-of-the-printer-ticket' FROM u RETURNING ticket_id)
				INSERT INTO tickets.ticket_messages (customer_id, ticket_id, sender_type, message)
				SELECT $1, ticket_id, 'Agent', 'Try turning it off' FROM t RETURNING message_id`, customer).Scan(&reply); err != nil {
				t.Fatal(err)
			}
		},
		InHand: []servicetest.InHand{
			{
				Stream: contracts.StreamEvents, Durable: contracts.DurableTicketsTopics, Lock: "tickets.topic_names",
				Publish: event(contracts.EventTopicUpdated, contracts.TopicChanged{TopicID: topic, Name: "Printers"}),
				Applied: count(`SELECT count(*) FROM tickets.topic_names WHERE customer_id = $1 AND topic_id = $2 AND name = 'Printers'`, customer, topic),
			},
			{
				Stream: contracts.StreamMailInbound, Durable: contracts.DurableTicketsMailInbound, Lock: "tickets.ticket_messages",
				Publish: publish(contracts.MailInboundSubject(channel), contracts.MailInboundMsgID(channel, "AAMk-1"), contracts.InboundMail{
					CustomerID: customer, ChannelID: channel, Mailbox: "support@contoso.com", ProviderMessageID: "AAMk-1",
					Subject: "Printer on fire", From: contracts.MailAddress{Name: "Jane", Address: "jane@fabrikam.com"},
					ReceivedAt: time.Now(), BodyText: "It is on fire.", ImportedAt: time.Now()}),
				Applied: count(`SELECT count(*) FROM tickets.ticket_messages WHERE customer_id = $1 AND provider_message_id = 'AAMk-1'`, customer),
			},
			{
				Stream: contracts.StreamEvents, Durable: contracts.DurableTicketsReplyDelivery, Lock: "tickets.ticket_messages",
				Publish: func(ctx context.Context, b *natsbus.Bus) error {
					return event(contracts.EventReplyDelivered, contracts.ReplyDelivery{MessageID: reply, Attempts: 1})(ctx, b)
				},
				Applied: func(ctx context.Context, db *pgx.Conn) (int, error) {
					return count(`SELECT count(*) FROM tickets.ticket_messages WHERE customer_id = $1 AND message_id = $2 AND delivery_status = 'sent'`,
						customer, reply)(ctx, db)
				},
			},
		},
	})
}
