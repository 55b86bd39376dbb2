package tickets

import "encoding/json"

// MailThread is what an import is decided on, loaded by the store under
// the thread's lock: the message made earlier from the same mail, and the
// ticket each threading rule's lookup found, locked (nil: none found, or
// deleted since).
type MailThread struct {
	// Earlier is the message already made from the mail.
	Earlier *MailImported
	// ByHeaders is the ticket of the newest mail of the channel whose
	// Message-ID is the first of the mail's ThreadIDs that names one.
	ByHeaders *Ticket
	// ByConversation is the ticket of the newest mail of the channel in
	// the mail's conversation.
	ByConversation *Ticket
	// BySubject is the ticket the subject's reference names, when it is
	// of the mail's channel; Participants are its people.
	BySubject    *Ticket
	Participants Participants
}

// MailPlan is what an import does (PlanImport).
type MailPlan struct {
	Outcome MailOutcome
	// Earlier is the message of a duplicate (nothing is written).
	Earlier MailImported
	// Ticket is the ticket the mail joins (MailJoined).
	Ticket Ticket
	// NewTicket is the ticket the mail opens (MailNewTicket); its end user
	// is the sender's, which the store finds or creates.
	NewTicket NewTicket
	// Message is the end-user message made from the mail (not for a
	// duplicate).
	Message NewMessage
}

// PlanImport decides what mail in does: a mail imported before is a
// duplicate; otherwise it joins the ticket of the first rule that found
// one, in this order: In-Reply-To and References, the conversation id,
// the subject's reference, the last only when the sender may
// (MayJoinBySubject); else it opens a ticket (Open, the mail's subject).
// Either way it becomes an end-user message.
func PlanImport(in MailImport, th MailThread) MailPlan {
	if th.Earlier != nil {
		return MailPlan{Outcome: MailDuplicate, Earlier: *th.Earlier}
	}
	mail := in.Mail
	p := MailPlan{Outcome: MailJoined, Message: NewMessage{SenderType: SenderEndUser, Text: in.Text,
		CustomFields: json.RawMessage(`{}`), Mail: &mail}}
	switch {
	case th.ByHeaders != nil:
		p.Ticket = *th.ByHeaders
	case th.ByConversation != nil:
		p.Ticket = *th.ByConversation
	case th.BySubject != nil && MayJoinBySubject(in.Sender.Address, in.Mailbox, th.Participants):
		p.Ticket = *th.BySubject
	default:
		p.Outcome = MailNewTicket
		p.NewTicket = NewTicket{ChannelID: in.Mail.ChannelID, Subject: in.Subject, Status: StatusOpen,
			CustomFields: json.RawMessage(`{}`)}
	}
	return p
}
