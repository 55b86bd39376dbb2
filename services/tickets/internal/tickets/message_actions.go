package tickets

import "time"

// The decisions of the message actions that change more than the message:
// the store locks the message's ticket and the message, calls the action's
// decide closure (built on these) and writes what it returns.

// ReplyPlan is what sending a message's reply does (PlanReply).
type ReplyPlan struct {
	// Reply is the Agent message that carries the reply, as it goes into
	// the ticket (AddToTicket).
	Reply MessagePlan
	// Text and Status are the replied message's reply after: the text that
	// was sent, and sent or modified.
	Text   string
	Status AIReplyStatus
	// Delivery is the new message's delivery by mail: pending from the
	// start, or nil when it does not go out by mail.
	Delivery *Delivery
	// TicketRef is the ticket's reference for the subject of the reply
	// by mail ("" for none).
	TicketRef string
}

// PlanReply decides what sending the reply of message m, in ticket t,
// does at now: ReplyToSend picks the text (or refuses with a 409), an
// Agent message of in.AccountID carries it, and it goes out by mail, its
// delivery pending, when the ticket is still in the e-mail channel the
// service found (in.EmailChannelID; the ticket may have moved since).
func PlanReply(m Message, t Ticket, in ReplyInput, now time.Time) (ReplyPlan, error) {
	text, status, err := ReplyToSend(m, in.ModifiedAnswer)
	if err != nil {
		return ReplyPlan{}, err
	}
	p := ReplyPlan{Text: text, Status: status}
	reply := NewMessage{SenderType: SenderAgent, Text: text, CustomFields: []byte(`{}`)}
	if in.AccountID > 0 {
		by := in.AccountID
		reply.SenderAccountID = &by
	}
	p.Reply = AddToTicket(t, reply, now)
	if in.EmailChannelID > 0 && in.EmailChannelID == t.ChannelID {
		// The mail context delivers it and reports how that went.
		p.Delivery = &Delivery{Status: DeliveryPending, UpdatedAt: now}
	}
	if in.Refs != nil {
		p.TicketRef = in.Refs.Ref(t.CustomerID, t.ID)
	}
	return p, nil
}

// EscalationPlan is what escalating a message does (PlanEscalation).
type EscalationPlan struct {
	// Ticket is the message's ticket after: Escalated.
	Ticket Ticket
	// Previous is the state it moved from ("" when it was Escalated).
	Previous Status
	// Comment goes to the ticket's feedback comments.
	Comment Escalation
}

// PlanEscalation decides what escalating a message of ticket t with e
// does at now: the ticket becomes Escalated, a move the transition table
// must allow (a Closed ticket cannot: 409).
func PlanEscalation(t Ticket, e Escalation, now time.Time) (EscalationPlan, error) {
	if !CanTransition(t.Status, StatusEscalated) {
		return EscalationPlan{}, TransitionError(t.Status, StatusEscalated)
	}
	p := EscalationPlan{Comment: e}
	if t.Status != StatusEscalated {
		p.Previous, t.Status, t.UpdatedAt = t.Status, StatusEscalated, now
	}
	p.Ticket = t
	return p, nil
}
