package main

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/servicetest"
)

// SIGTERM while each of the assistant's consumers (new messages, detection
// requests) holds an event in its handler, waiting on a lock in
// PostgreSQL: each event's work (the reply prepared, the topics assigned)
// is done once, before run returns or, when the handlers outlast the
// grace, by the next run.
func TestSIGTERMWithAnEventInEachConsumer(t *testing.T) {
	const customer = 6
	// The topics service's answers: the password question is about topic 3
	// for the offline engine.
	topics := []contracts.TopicSummary{
		{TopicID: 1, Name: "Billing", Description: "Charges, payment methods, declined cards."},
		{TopicID: 2, Name: "Shipping", Description: "Delivery of parcels, tracking numbers, late deliveries."},
		{TopicID: 3, Name: "Password", Description: "Signing in, forgotten passwords, reset links."},
	}
	docs := []contracts.LinkedDocument{
		{DocumentID: 11, TopicID: 1, Title: "Declined payments", RelevanceScore: 2, Content: "A payment is declined when the card expired or the bank blocks it. Add another card under Settings > Billing."},
		{DocumentID: 21, TopicID: 2, Title: "Tracking your parcel", RelevanceScore: 2, Content: "The shipping email has a tracking number. A parcel takes 2 to 4 days to arrive."},
		{DocumentID: 31, TopicID: 3, Title: "Resetting your password", RelevanceScore: 2, Content: "Click Forgot password on the sign-in page. The reset link arrives by email and is valid for 60 minutes. Check your spam folder if the reset email does not arrive."},
	}
	var ticket, created, detect int64 // the messages of the two events
	event := func(typ string, data func() any) func(context.Context, *natsbus.Bus) error {
		return func(ctx context.Context, b *natsbus.Bus) error {
			ev := contracts.Event[any]{ID: "ev-" + typ, Type: typ, CustomerID: customer, OccurredAt: time.Now(), Data: data()}
			body, err := json.Marshal(ev)
			if err != nil {
				return err
			}
			return b.PublishRaw(ctx, contracts.EventSubject(typ), ev.ID, body)
		}
	}
	count := func(query string, id *int64) func(context.Context, *pgx.Conn) (int, error) {
		return func(ctx context.Context, db *pgx.Conn) (int, error) {
			var n int
			err := db.QueryRow(ctx, query, customer, *id).Scan(&n)
			return n, err
		}
	}
	servicetest.ConsumerShutdownTest(t, servicetest.ConsumerShutdownCase{
		Name: "assistant",
		Run:  run,
		Serve: func(c *servicetest.RPCClient) error {
			_, err := natsbus.Serve(c.Bus, contracts.RPCTopicsAll, contracts.QueueTopics,
				func(context.Context, contracts.TopicsAllRequest) (contracts.TopicsAllReply, error) {
					return contracts.TopicsAllReply{Topics: topics}, nil
				})
			if err != nil {
				return err
			}
			_, err = natsbus.Serve(c.Bus, contracts.RPCTopicDocuments, contracts.QueueTopics,
				func(_ context.Context, r contracts.TopicDocumentsRequest) (contracts.TopicDocumentsReply, error) {
					var out []contracts.LinkedDocument
					for _, d := range docs {
						if slices.Contains(r.TopicIDs, d.TopicID) {
							out = append(out, d)
						}
					}
					return contracts.TopicDocumentsReply{Documents: out}, nil
				})
			if err != nil {
				return err
			}
			_, err = natsbus.Serve(c.Bus, contracts.RPCTopicNames, contracts.QueueTopics,
				func(_ context.Context, r contracts.TopicNamesRequest) (contracts.TopicNamesReply, error) {
					out := map[int64]string{}
					for _, tp := range topics {
						if slices.Contains(r.TopicIDs, tp.TopicID) {
							out[tp.TopicID] = tp.Name
						}
					}
					return contracts.TopicNamesReply{Names: out}, nil
				})
			if err != nil {
				return err
			}
			_, err = natsbus.Serve(c.Bus, contracts.RPCTopicActions, contracts.QueueTopics,
				func(context.Context, contracts.TopicActionsRequest) (contracts.TopicActionsReply, error) {
					return contracts.TopicActionsReply{}, nil
				})
			return err
		},
		Setup: func(t *testing.T, db *pgx.Conn) {
			ctx := context.Background()
			if err := db.QueryRow(ctx, `WITH u AS (INSERT INTO tickets.end_users (customer_id, name, language)
				VALUES ($1, 'Ada', 'en') RETURNING end_user_id)
				INSERT INTO tickets.tickets (customer_id, end_user_id, subject, status, channel_id, ticket_token)
				SELECT $1, end_user_id, 'Password', 'Open', 9, 'token-of-the-password-ticket' FROM u RETURNING ticket_id`, customer).Scan(&ticket); err != nil {
				t.Fatal(err)
			}
			for _, id := range []*int64{&created, &detect} {
				if err := db.QueryRow(ctx, `INSERT INTO tickets.ticket_messages (customer_id, ticket_id, sender_type, message)
					VALUES ($1, $2, 'EndUser', 'I forgot my password and the reset email never arrives') RETURNING message_id`,
					customer, ticket).Scan(id); err != nil {
					t.Fatal(err)
				}
			}
		},
		InHand: []servicetest.InHand{
			{
				Stream: contracts.StreamEvents, Durable: contracts.DurableAssistantMessages, Lock: "tickets.ticket_messages",
				Publish: event(contracts.EventMessageCreated, func() any {
					return contracts.MessageChanged{MessageID: created, TicketID: ticket, ChannelID: 9, SenderType: "EndUser", Language: "en"}
				}),
				Applied: count(`SELECT count(*) FROM tickets.ticket_messages WHERE customer_id = $1 AND message_id = $2 AND ai_reply_status = 'prepared'`, &created),
			},
			{
				Stream: contracts.StreamEvents, Durable: contracts.DurableAssistantDetect, Lock: "tickets.ticket_messages",
				Publish: event(contracts.EventTopicDetectionRequested, func() any {
					return contracts.TopicDetectionRequested{MessageID: detect, TicketID: ticket}
				}),
				Applied: count(`SELECT count(*) FROM tickets.message_topics WHERE customer_id = $1 AND message_id = $2 AND topic_id = 3`, &detect),
			},
		},
	})
}
