package tickets

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
)

func TestTransitionTable(t *testing.T) {
	// Every pair, spelled out: a change of the table must change this test.
	allowed := map[Status]string{
		StatusOpen:      "Open Pending Escalated Resolved Closed",
		StatusPending:   "Open Pending Escalated Resolved Closed",
		StatusEscalated: "Open Pending Escalated Resolved Closed",
		StatusResolved:  "Open Escalated Resolved Closed",
		StatusClosed:    "Open Closed",
	}
	for _, from := range Statuses {
		for _, to := range Statuses {
			want := strings.Contains(" "+allowed[from]+" ", " "+string(to)+" ")
			if got := CanTransition(from, to); got != want {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, got, want)
			}
		}
	}
	err := TransitionError(StatusClosed, StatusEscalated)
	if e := new(apperr.Error); !errors.As(err, &e) || e.Code != apperr.Conflict || e.Fields["status"] == "" {
		t.Fatalf("TransitionError = %#v", err)
	}
}

func TestAfterEndUserMessage(t *testing.T) {
	want := map[Status]Status{StatusOpen: StatusOpen, StatusPending: StatusOpen, StatusEscalated: StatusEscalated,
		StatusResolved: StatusOpen, StatusClosed: StatusOpen}
	for from, to := range want {
		if got := AfterEndUserMessage(from); got != to {
			t.Errorf("AfterEndUserMessage(%s) = %s, want %s", from, got, to)
		}
		// The reopening moves are ones a request could make too.
		if !CanTransition(from, want[from]) {
			t.Errorf("%s -> %s is not in the table", from, to)
		}
	}
}

func TestParseStatusAndSender(t *testing.T) {
	for in, want := range map[string]Status{"open": StatusOpen, "CLOSED": StatusClosed, "Escalated": StatusEscalated} {
		if got, ok := ParseStatus(in); !ok || got != want {
			t.Errorf("ParseStatus(%q) = %s, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "opened", "Open ", "0"} {
		if _, ok := ParseStatus(in); ok {
			t.Errorf("ParseStatus(%q) accepted", in)
		}
	}
	if s, ok := ParseSenderType("enduser"); !ok || s != SenderEndUser {
		t.Errorf("ParseSenderType(enduser) = %s, %v", s, ok)
	}
	if _, ok := ParseSenderType("customer"); ok {
		t.Error("ParseSenderType(customer) accepted")
	}
}

// channelLookups answers channel lookups from a map (the NATS client is tested
// end to end).
type channelLookups struct {
	channels map[int64]contracts.ChannelReply
	err      error
}

func (f channelLookups) Channel(_ context.Context, _, id int64) (contracts.ChannelReply, error) {
	return f.channels[id], f.err
}

func TestValidateTicket(t *testing.T) {
	look := channelLookups{channels: map[int64]contracts.ChannelReply{
		1: {Exists: true, ChannelID: 1},
		2: {Exists: true, ChannelID: 2, IsDeleted: true},
	}}
	ctx := context.Background()
	got, err := ValidateTicket(ctx, look, 7, TicketInput{Subject: "  Broken printer ", ChannelID: 1, EndUserID: 3, Status: "pending"})
	if err != nil || got.Subject != "Broken printer" || got.Status != StatusPending || string(got.CustomFields) != "{}" ||
		got.SearchConfig != SubjectSearchConfig("Broken printer") {
		t.Fatalf("ValidateTicket = %+v, %v", got, err)
	}
	if got, _ := ValidateTicket(ctx, look, 7, TicketInput{Subject: "x", ChannelID: 1, EndUserID: 3}); got.Status != StatusOpen {
		t.Fatalf("default status %s", got.Status)
	}
	for name, tc := range map[string]struct {
		in    TicketInput
		field string
	}{
		"no subject":       {TicketInput{ChannelID: 1, EndUserID: 3}, "subject"},
		"long subject":     {TicketInput{Subject: strings.Repeat("s", MaxSubjectLen+1), ChannelID: 1, EndUserID: 3}, "subject"},
		"control char":     {TicketInput{Subject: "a\x07b", ChannelID: 1, EndUserID: 3}, "subject"},
		"no channel":       {TicketInput{Subject: "s", EndUserID: 3}, "channelID"},
		"no end user":      {TicketInput{Subject: "s", ChannelID: 1}, "endUserID"},
		"bad status":       {TicketInput{Subject: "s", ChannelID: 1, EndUserID: 3, Status: "done"}, "status"},
		"fields not obj":   {TicketInput{Subject: "s", ChannelID: 1, EndUserID: 3, CustomFields: json.RawMessage(`[1]`)}, "customFieldsData"},
		"unknown channel":  {TicketInput{Subject: "s", ChannelID: 9, EndUserID: 3}, "channelID"},
		"deleted channel":  {TicketInput{Subject: "s", ChannelID: 2, EndUserID: 3}, "channelID"},
		"negative channel": {TicketInput{Subject: "s", ChannelID: -1, EndUserID: 3}, "channelID"},
	} {
		_, err := ValidateTicket(ctx, look, 7, tc.in)
		var e *apperr.Error
		if !errors.As(err, &e) || e.Code != apperr.Invalid || e.Fields[tc.field] == "" {
			t.Errorf("%s: %v, want 400 on %s", name, err, tc.field)
		}
	}
	// The mail context not answering is not the client's fault.
	down := channelLookups{err: apperr.E(apperr.Unavailable, "no answer")}
	if _, err := ValidateTicket(ctx, down, 7, TicketInput{Subject: "s", ChannelID: 1, EndUserID: 3}); !apperr.Is(err, apperr.Unavailable) {
		t.Fatalf("lookup down: %v", err)
	}
}

func TestValidateMessage(t *testing.T) {
	m, err := ValidateMessage(MessageInput{Text: " Hello\nthere ", SenderType: "agent"}, 42)
	if err != nil || m.Text != "Hello\nthere" || m.SenderType != SenderAgent || m.SenderAccountID == nil || *m.SenderAccountID != 42 {
		t.Fatalf("ValidateMessage = %+v, %v", m, err)
	}
	if m, _ := ValidateMessage(MessageInput{Text: "hi"}, 42); m.SenderType != SenderEndUser || m.SenderAccountID != nil {
		t.Fatalf("default = %+v", m)
	}
	for name, in := range map[string]MessageInput{
		"empty":      {Text: "  "},
		"too long":   {Text: strings.Repeat("a", MaxMessageLen+1)},
		"bad sender": {Text: "x", SenderType: "bot"},
		"fields":     {Text: "x", CustomFields: json.RawMessage(`"s"`)},
	} {
		if _, err := ValidateMessage(in, 1); !apperr.Is(err, apperr.Invalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestTextLanguage(t *testing.T) {
	for text, want := range map[string]string{
		"My order arrived broken and I would like a refund for the damaged parts, please.": "english",
		"Mi pedido llegó roto y quisiera un reembolso por las piezas dañadas, por favor.":  "spanish",
		"Meine Bestellung ist kaputt angekommen und ich möchte eine Rückerstattung bitte.": "german",
		"ok":        "simple",
		"12345 #@!": "simple",
		"こんにちは、注文が届きません。": "simple", // recognised, but PostgreSQL has no Japanese stemmer
	} {
		if _, cfg := TextLanguage(text); cfg != want {
			t.Errorf("TextLanguage(%q) config %s, want %s", text, cfg, want)
		}
	}
}
