package tickets

import (
	"testing"

	"supportplatform.dev/pkg/contracts"
)

// PlanImport picks the ticket of the first rule that found one; the
// subject's reference only for the ticket's people.
func TestPlanImport(t *testing.T) {
	byHeaders, byConversation, bySubject := &Ticket{ID: 1}, &Ticket{ID: 2}, &Ticket{ID: 3}
	ada := Participants{EndUser: "ada@example.com", Thread: []string{"ada@example.com", "support@shop.example", "bob@example.com"}}
	earlier := &MailImported{Outcome: MailDuplicate, TicketID: 9, MessageID: 90}
	for _, tc := range []struct {
		name   string
		sender string
		th     MailThread
		want   MailOutcome
		ticket int64 // the ticket joined
	}{
		{"a mail imported before is a duplicate", "ada@example.com",
			MailThread{Earlier: earlier, ByHeaders: byHeaders}, MailDuplicate, 0},
		{"In-Reply-To/References first", "carol@example.net",
			MailThread{ByHeaders: byHeaders, ByConversation: byConversation, BySubject: bySubject, Participants: ada}, MailJoined, 1},
		{"then the conversation", "carol@example.net",
			MailThread{ByConversation: byConversation, BySubject: bySubject, Participants: ada}, MailJoined, 2},
		{"then the subject's ticket, for its end user", "ada@example.com",
			MailThread{BySubject: bySubject, Participants: ada}, MailJoined, 3},
		{"the subject's ticket for one on its thread, in any case", "Bob@Example.com",
			MailThread{BySubject: bySubject, Participants: ada}, MailJoined, 3},
		{"a stranger naming the ticket opens one", "mallory@evil.example",
			MailThread{BySubject: bySubject, Participants: ada}, MailNewTicket, 0},
		{"the mailbox is nobody", "support@shop.example",
			MailThread{BySubject: bySubject, Participants: ada}, MailNewTicket, 0},
		{"a stranger joins by the headers", "mallory@evil.example",
			MailThread{ByHeaders: byHeaders, BySubject: bySubject, Participants: ada}, MailJoined, 1},
		{"nothing found opens a ticket", "ada@example.com", MailThread{}, MailNewTicket, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := MailImport{CustomerID: 5, Sender: contracts.MailAddress{Address: tc.sender}, Subject: "Parcel", Text: "Where is it?",
				Mailbox: "support@shop.example", Mail: MailFacts{ChannelID: 4, ProviderMessageID: "p1"}}
			p := PlanImport(in, tc.th)
			if p.Outcome != tc.want {
				t.Fatalf("outcome %s, want %s", p.Outcome, tc.want)
			}
			switch p.Outcome {
			case MailDuplicate:
				if p.Earlier != *earlier || p.Ticket.ID != 0 || p.NewTicket.Subject != "" {
					t.Fatalf("duplicate %+v", p)
				}
				return
			case MailJoined:
				if p.Ticket.ID != tc.ticket {
					t.Fatalf("joined ticket %d, want %d", p.Ticket.ID, tc.ticket)
				}
			case MailNewTicket:
				nt := p.NewTicket
				if nt.ChannelID != 4 || nt.Subject != "Parcel" || nt.Status != StatusOpen || string(nt.CustomFields) != `{}` ||
					nt.SearchConfig != SubjectSearchConfig("Parcel") {
					t.Fatalf("new ticket %+v", nt)
				}
			}
			m := MailMessage(in)
			if m.SenderType != SenderEndUser || m.Text != "Where is it?" || m.Mail == nil || m.Mail.ProviderMessageID != "p1" {
				t.Fatalf("message %+v", m)
			}
		})
	}
}
