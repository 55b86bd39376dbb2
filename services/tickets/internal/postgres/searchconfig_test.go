package postgres_test

import (
	"context"
	"encoding/json"
	"testing"

	"supportplatform.dev/services/tickets/internal/tickets"
)

// The ticket's search configuration follows its end user's recognised
// language; agent messages are indexed with it, without detection.
func TestMessagesTakeTheTicketsSearchConfig(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	first := msgOpen(t, s, tenantA, "Hola, mi pedido no ha llegado todavía y necesito saber dónde está el paquete, por favor.")
	reply, err := s.AddMessage(ctx, tenantA, first.TicketID, tickets.MessageInto(tickets.NewMessage{SenderType: tickets.SenderAgent,
		Text: "OK", CustomFields: json.RawMessage(`{}`)}, storeClock))
	if err != nil {
		t.Fatal(err)
	}
	config := func(sql string, id int64) string {
		t.Helper()
		var cfg string
		if err := pool.QueryRow(ctx, sql, id).Scan(&cfg); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	if got := config(`SELECT search_config::text FROM tickets WHERE ticket_id = $1`, first.TicketID); got != "spanish" {
		t.Fatalf("ticket config %s", got)
	}
	// "OK" alone is recognised as nothing; the ticket's language serves.
	if got := config(`SELECT search_config::text FROM ticket_messages WHERE message_id = $1`, reply.ID); got != "spanish" {
		t.Fatalf("agent message config %s", got)
	}
	// An end-user message in another recognised language moves the ticket.
	if _, err := s.AddMessage(ctx, tenantA, first.TicketID, tickets.MessageInto(tickets.NewMessage{SenderType: tickets.SenderEndUser,
		Text:         "Sorry, I will write in English: my parcel still has not arrived and I need to know where it is.",
		CustomFields: json.RawMessage(`{}`)}, storeClock)); err != nil {
		t.Fatal(err)
	}
	if got := config(`SELECT search_config::text FROM tickets WHERE ticket_id = $1`, first.TicketID); got != "english" {
		t.Fatalf("ticket config after English %s", got)
	}
}
