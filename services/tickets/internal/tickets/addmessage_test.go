package tickets

import (
	"testing"
	"time"
)

func TestAddToTicket(t *testing.T) {
	const (
		spanish = "Hola, mi pedido no ha llegado todavía y necesito saber dónde está el paquete, por favor."
		english = "Sorry, I will write in English: my parcel still has not arrived and I need to know where it is."
	)
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		status     Status
		ticketCfg  string
		sender     SenderType
		text       string
		wantStatus Status
		wantPrev   Status
		wantTicket string // the ticket's search configuration after
		wantMsg    string // the message's
		wantLang   string
	}{
		{"end user reopens a Closed ticket", StatusClosed, "english", SenderEndUser, english, StatusOpen, StatusClosed, "english", "english", "en"},
		{"end user reopens a Pending ticket", StatusPending, "english", SenderEndUser, english, StatusOpen, StatusPending, "english", "english", "en"},
		{"end user reopens a Resolved ticket", StatusResolved, "english", SenderEndUser, english, StatusOpen, StatusResolved, "english", "english", "en"},
		{"end user leaves Escalated", StatusEscalated, "english", SenderEndUser, english, StatusEscalated, "", "english", "english", "en"},
		{"end user leaves Open", StatusOpen, "english", SenderEndUser, english, StatusOpen, "", "english", "english", "en"},
		{"agent leaves Closed", StatusClosed, "english", SenderAgent, english, StatusClosed, "", "english", "english", ""},
		{"AI leaves Pending", StatusPending, "english", SenderAI, english, StatusPending, "", "english", "english", ""},
		{"end user's language moves the ticket", StatusOpen, "spanish", SenderEndUser, english, StatusOpen, "", "english", "english", "en"},
		{"end user's unrecognised text keeps the ticket's", StatusOpen, "spanish", SenderEndUser, "OK", StatusOpen, "", "spanish", "simple", ""},
		{"agent's text takes the ticket's without detection", StatusOpen, "spanish", SenderAgent, english, StatusOpen, "", "spanish", "spanish", ""},
		{"agent's text is detected while the ticket has none", StatusOpen, "simple", SenderAgent, spanish, StatusOpen, "", "simple", "spanish", "es"},
		{"system text on a new ticket", StatusOpen, "", SenderSystem, "OK", StatusOpen, "", "", "simple", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := Ticket{ID: 7, Status: tc.status, SearchConfig: tc.ticketCfg, UpdatedAt: now.Add(-time.Hour)}
			p := AddToTicket(before, NewMessage{SenderType: tc.sender, Text: tc.text}, now)
			if p.Ticket.Status != tc.wantStatus || p.Previous != tc.wantPrev {
				t.Errorf("status %s (previous %q), want %s (previous %q)", p.Ticket.Status, p.Previous, tc.wantStatus, tc.wantPrev)
			}
			if p.Ticket.SearchConfig != tc.wantTicket || p.SearchConfig != tc.wantMsg || p.Language != tc.wantLang {
				t.Errorf("ticket config %q, message config %q, language %q; want %q, %q, %q",
					p.Ticket.SearchConfig, p.SearchConfig, p.Language, tc.wantTicket, tc.wantMsg, tc.wantLang)
			}
			if !p.Ticket.UpdatedAt.Equal(now) || p.Ticket.ID != 7 {
				t.Errorf("ticket %+v, want ticket 7 updated at %s", p.Ticket, now)
			}
		})
	}
}
