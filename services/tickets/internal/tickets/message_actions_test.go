package tickets

import (
	"testing"
	"time"

	"supportplatform.dev/pkg/apperr"
)

func TestPlanReply(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	prepared := Message{ID: 1, AIReply: AIReply{Status: AIReplyPrepared, Text: "Prepared."}}
	refs, err := NewRefs("0123456789abcdef0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	ticket := Ticket{ID: 7, CustomerID: 3, ChannelID: 4}
	for _, tc := range []struct {
		name       string
		m          Message
		in         ReplyInput
		code       apperr.Code // "" when it is sent
		text       string
		status     AIReplyStatus
		by         int64 // 0: no account
		pending    bool
		wantTagged bool
	}{
		{"the prepared reply", prepared, ReplyInput{AccountID: 5}, "", "Prepared.", AIReplySent, 5, false, false},
		{"the agent's own text", prepared, ReplyInput{ModifiedAnswer: "Mine.", AccountID: 5}, "", "Mine.", AIReplyModified, 5, false, false},
		{"own text without a prepared reply", Message{ID: 1}, ReplyInput{ModifiedAnswer: "Mine."}, "", "Mine.", AIReplyModified, 0, false, false},
		{"nothing to send", Message{ID: 1}, ReplyInput{AccountID: 5}, apperr.Conflict, "", "", 0, false, false},
		{"sent already", Message{ID: 1, AIReply: AIReply{Status: AIReplySent, Text: "x"}}, ReplyInput{ModifiedAnswer: "again"}, apperr.Conflict, "", "", 0, false, false},
		{"by mail in the ticket's e-mail channel", prepared, ReplyInput{AccountID: 5, EmailChannelID: 4, Refs: refs}, "", "Prepared.", AIReplySent, 5, true, true},
		{"not by mail once the ticket moved channel", prepared, ReplyInput{AccountID: 5, EmailChannelID: 9}, "", "Prepared.", AIReplySent, 5, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanReply(tc.m, ticket, tc.in, now)
			if tc.code != "" {
				if !apperr.Is(err, tc.code) {
					t.Fatalf("error %v, want %s", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Text != tc.text || p.Status != tc.status || p.Reply.Message.Text != tc.text || p.Reply.Message.SenderType != SenderAgent {
				t.Fatalf("plan %+v", p)
			}
			if (p.Reply.Message.SenderAccountID == nil) != (tc.by == 0) || (tc.by != 0 && *p.Reply.Message.SenderAccountID != tc.by) {
				t.Fatalf("sender account %v, want %d", p.Reply.Message.SenderAccountID, tc.by)
			}
			if pending := p.Delivery != nil; pending != tc.pending ||
				(pending && (p.Delivery.Status != DeliveryPending || !p.Delivery.UpdatedAt.Equal(now))) {
				t.Fatalf("delivery %+v, want pending %v", p.Delivery, tc.pending)
			}
			if tagged := p.TicketRef != ""; tagged != tc.wantTagged || (tagged && refs.Find(3, "Re: [#"+p.TicketRef+"]") != 7) {
				t.Fatalf("ticket ref %q", p.TicketRef)
			}
		})
	}
}

func TestPlanEscalation(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	e := Escalation{Comment: "wrong", Email: "a@example.com"}
	for _, from := range Statuses {
		t.Run(string(from), func(t *testing.T) {
			p, err := PlanEscalation(Ticket{ID: 7, Status: from}, e, now)
			switch from {
			case StatusClosed:
				if !apperr.Is(err, apperr.Conflict) {
					t.Fatalf("error %v, want a conflict", err)
				}
				return
			case StatusEscalated:
				if err != nil || p.Previous != "" || p.Ticket.Status != StatusEscalated || !p.Ticket.UpdatedAt.IsZero() {
					t.Fatalf("plan %+v, %v: want no move", p, err)
				}
			default:
				if err != nil || p.Previous != from || p.Ticket.Status != StatusEscalated || !p.Ticket.UpdatedAt.Equal(now) {
					t.Fatalf("plan %+v, %v: want a move from %s", p, err, from)
				}
			}
			if p.Comment != e || p.Ticket.ID != 7 {
				t.Fatalf("plan %+v", p)
			}
		})
	}
}
