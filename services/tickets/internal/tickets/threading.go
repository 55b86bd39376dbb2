package tickets

import (
	"encoding/json"
	"time"
)

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
}

// PlanImport decides what mail in does: a mail imported before is a
// duplicate; otherwise it joins the ticket of the first rule that found
// one, in this order: In-Reply-To and References, the conversation id,
// the subject's reference, the last only when the sender may
// (MayJoinBySubject); else it opens a ticket (Open, the mail's subject).
// Either way it becomes an end-user message (MailMessage).
func PlanImport(in MailImport, th MailThread) MailPlan {
	if th.Earlier != nil {
		return MailPlan{Outcome: MailDuplicate, Earlier: *th.Earlier}
	}
	p := MailPlan{Outcome: MailJoined}
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
			CustomFields: json.RawMessage(`{}`), SearchConfig: SubjectSearchConfig(in.Subject)}
	}
	return p
}

// MailMessage is the end-user message made from mail in.
func MailMessage(in MailImport) NewMessage {
	mail := in.Mail
	return NewMessage{SenderType: SenderEndUser, Text: in.Text, CustomFields: json.RawMessage(`{}`), Mail: &mail}
}

// MailDecisions are the decisions of one import, which the store calls
// under the thread's lock (ImportDecisions builds them).
type MailDecisions struct {
	// Plan decides on what the store loaded (PlanImport).
	Plan func(MailThread) MailPlan
	// Add is what the mail's message does to the ticket it joins or opens
	// (AddToTicket).
	Add func(Ticket) MessagePlan
	// Fits refuses attachments over the customer's quota once they are
	// counted in used (CheckQuota).
	Fits func(used, size int64) error
}

// ImportDecisions are the decisions of importing mail in at now():
// PlanImport, AddToTicket of MailMessage and the quota in.QuotaBytes.
func ImportDecisions(in MailImport, now func() time.Time) MailDecisions {
	return MailDecisions{
		Plan: func(th MailThread) MailPlan { return PlanImport(in, th) },
		Add:  MessageInto(MailMessage(in), now),
		Fits: QuotaFits(in.QuotaBytes),
	}
}
