package tickets

import "time"

// MessagePlan is what adding a message to a ticket does: AddToTicket
// decides it, the store writes it.
type MessagePlan struct {
	// Message is the message to insert.
	Message NewMessage
	// Ticket is the ticket after the message: its state (an end-user
	// message reopens it), search configuration and dateUpdated.
	Ticket Ticket
	// Previous is the state the message moved the ticket from ("" when it
	// stays: no ticket.updated).
	Previous Status
	// SearchConfig is the configuration the message's text is indexed in.
	SearchConfig string
	// Language is the message's detected language ("" when not detected),
	// for ticket.message.created.
	Language string
}

// AddToTicket decides what message in does to ticket t at now. An
// end-user message's language is detected, and when recognised becomes the
// ticket's search configuration; other messages are indexed with the
// ticket's (detected only while the ticket has none). An end-user message
// moves the ticket as AfterEndUserMessage says; every message touches the
// ticket's dateUpdated.
func AddToTicket(t Ticket, in NewMessage, now time.Time) MessagePlan {
	p := MessagePlan{Message: in, SearchConfig: t.SearchConfig}
	endUser := in.SenderType == SenderEndUser
	if endUser || p.SearchConfig == "" || p.SearchConfig == "simple" {
		p.Language, p.SearchConfig = TextLanguage(in.Text)
	}
	if endUser && p.SearchConfig != "simple" {
		t.SearchConfig = p.SearchConfig
	}
	if endUser {
		if next := AfterEndUserMessage(t.Status); next != t.Status {
			p.Previous, t.Status = t.Status, next
		}
	}
	t.UpdatedAt = now
	p.Ticket = t
	return p
}

// MessageInto is the decision the store calls on the ticket it locked (or
// inserted) for message in: AddToTicket at now().
func MessageInto(in NewMessage, now func() time.Time) func(Ticket) MessagePlan {
	return func(t Ticket) MessagePlan { return AddToTicket(t, in, now()) }
}
