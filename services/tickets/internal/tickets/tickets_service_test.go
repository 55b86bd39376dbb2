package tickets

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/paging"
)

// tkLookups answers as the other services would: channel 1 is live, 2
// deleted; account 10 an admin, 11 an agent, 12 an integration.
type tkLookups struct{ down bool }

func (l tkLookups) Channel(_ context.Context, _, id int64) (contracts.ChannelReply, error) {
	if l.down {
		return contracts.ChannelReply{}, apperr.E(apperr.Unavailable, "mail does not answer")
	}
	return contracts.ChannelReply{Exists: id == 1 || id == 2, ChannelID: id, IsDeleted: id == 2}, nil
}

func (tkLookups) TopicNames(context.Context, int64, []int64) (map[int64]string, error) {
	return nil, nil
}

func (tkLookups) TopicActions(context.Context, int64, int64) ([]contracts.LinkedAction, error) {
	return nil, nil
}

func (tkLookups) TopicDocuments(context.Context, int64, []int64, int) ([]contracts.LinkedDocument, error) {
	return nil, nil
}

func (l tkLookups) Accounts(_ context.Context, _ int64, ids ...int64) ([]contracts.AccountSummary, error) {
	roles := map[int64]string{10: "admin", 11: "agent", 12: "integration"}
	var out []contracts.AccountSummary
	for _, id := range ids {
		if r, ok := roles[id]; ok {
			out = append(out, contracts.AccountSummary{AccountID: id, Role: r})
		}
	}
	return out, nil
}

// tkStore holds one ticket and records what reached it.
type tkStore struct {
	ticket  Ticket
	updated *Ticket
	created *NewTicket
	bulk    []int64
	listed  *TicketFilter
}

func (s *tkStore) ListTickets(_ context.Context, _ int64, f TicketFilter, _ paging.Page) (TicketList, error) {
	s.listed = &f
	return TicketList{Items: []TicketDetails{{Ticket: s.ticket}}, Total: 1, More: true}, nil
}

func (s *tkStore) TicketDetails(context.Context, int64, int64) (TicketDetails, error) {
	return TicketDetails{Ticket: s.ticket}, nil
}

func (s *tkStore) CreateTicket(_ context.Context, _ int64, in NewTicket) (TicketDetails, error) {
	s.created = &in
	return TicketDetails{}, nil
}

func (s *tkStore) UpdateTicket(_ context.Context, _, _ int64, change func(Ticket) (Ticket, error)) error {
	t, err := change(s.ticket)
	if err == nil {
		s.updated = &t
	}
	return err
}

func (s *tkStore) DeleteTicket(context.Context, int64, int64) error { return nil }

func (s *tkStore) BulkUpdateTickets(_ context.Context, _ int64, ids []int64, change func([]Ticket) ([]TicketChange, error)) error {
	s.bulk = ids
	_, err := change([]Ticket{s.ticket})
	return err
}

func (s *tkStore) Conversation(context.Context, int64, int64) (Ticket, []Message, error) {
	return s.ticket, nil, nil
}

func tkStr(s string) *string { return &s }
func tkInt(v int64) *int64   { return &v }
func tkBool(b bool) *bool    { return &b }

func tkFields(t *testing.T, err error, want string) {
	t.Helper()
	var ae *apperr.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v, want one naming %q", err, want)
	}
	if want == "" {
		if len(ae.Fields) != 0 {
			t.Fatalf("fields %v, want none", ae.Fields)
		}
		return
	}
	if ae.Fields[want] == "" {
		t.Fatalf("fields %v, want %q", ae.Fields, want)
	}
}

func TestTkUpdateTicket(t *testing.T) {
	rep := int64(11)
	cases := []struct {
		name   string
		from   Status
		patch  TicketPatch
		code   apperr.Code // "" = success
		field  string
		status Status
		check  func(t *testing.T, got Ticket)
	}{
		{"status", StatusOpen, TicketPatch{Status: tkStr("pending")}, "", "", StatusPending, nil},
		{"isClosed true closes", StatusPending, TicketPatch{IsClosed: tkBool(true)}, "", "", StatusClosed, nil},
		{"isClosed false reopens a Closed ticket", StatusClosed, TicketPatch{IsClosed: tkBool(false)}, "", "", StatusOpen, nil},
		{"isClosed false leaves an open one", StatusEscalated, TicketPatch{IsClosed: tkBool(false)}, "", "", StatusEscalated, nil},
		{"status and isClosed agree", StatusOpen, TicketPatch{Status: tkStr("Closed"), IsClosed: tkBool(true)}, "", "", StatusClosed, nil},
		{"status contradicts isClosed", StatusOpen, TicketPatch{Status: tkStr("Open"), IsClosed: tkBool(true)}, apperr.Invalid, "isClosed", "", nil},
		{"closed contradicts isClosed false", StatusOpen, TicketPatch{Status: tkStr("Closed"), IsClosed: tkBool(false)}, apperr.Invalid, "isClosed", "", nil},
		{"unknown status", StatusOpen, TicketPatch{Status: tkStr("Done")}, apperr.Invalid, "status", "", nil},
		{"forbidden transition", StatusClosed, TicketPatch{Status: tkStr("Escalated")}, apperr.Conflict, "status", "", nil},
		{"a Closed ticket only reopens", StatusClosed, TicketPatch{Status: tkStr("Resolved")}, apperr.Conflict, "status", "", nil},
		{"same status is no move", StatusClosed, TicketPatch{Status: tkStr("closed")}, "", "", StatusClosed, nil},
		{"subject trimmed", StatusOpen, TicketPatch{Subject: tkStr("  New subject ")}, "", "", StatusOpen, func(t *testing.T, got Ticket) {
			if got.Subject != "New subject" || got.SubjectConfig != SubjectSearchConfig("New subject") {
				t.Fatalf("subject %q in %q", got.Subject, got.SubjectConfig)
			}
		}},
		// The store indexes the subject again only when it changed.
		{"same subject", StatusOpen, TicketPatch{Subject: tkStr("Old"), Status: tkStr("Pending")}, "", "", StatusPending, func(t *testing.T, got Ticket) {
			if got.Subject != "Old" || got.SubjectConfig != "" {
				t.Fatalf("subject %q in %q", got.Subject, got.SubjectConfig)
			}
		}},
		{"subject blank", StatusOpen, TicketPatch{Subject: tkStr("  ")}, apperr.Invalid, "subject", "", nil},
		{"subject too long", StatusOpen, TicketPatch{Subject: tkStr(strings.Repeat("s", MaxSubjectLen+1))}, apperr.Invalid, "subject", "", nil},
		{"assign an agent", StatusOpen, TicketPatch{CustomerRepIDSet: true, CustomerRepID: &rep}, "", "", StatusOpen, func(t *testing.T, got Ticket) {
			if got.CustomerRepID == nil || *got.CustomerRepID != 11 {
				t.Fatalf("rep %v", got.CustomerRepID)
			}
		}},
		{"assign an admin", StatusOpen, TicketPatch{CustomerRepIDSet: true, CustomerRepID: tkInt(10)}, "", "", StatusOpen, nil},
		{"unassign", StatusOpen, TicketPatch{CustomerRepIDSet: true}, "", "", StatusOpen, func(t *testing.T, got Ticket) {
			if got.CustomerRepID != nil {
				t.Fatalf("rep %v", *got.CustomerRepID)
			}
		}},
		{"integration account", StatusOpen, TicketPatch{CustomerRepIDSet: true, CustomerRepID: tkInt(12)}, apperr.Invalid, "customerRepID", "", nil},
		{"unknown account", StatusOpen, TicketPatch{CustomerRepIDSet: true, CustomerRepID: tkInt(99)}, apperr.Invalid, "customerRepID", "", nil},
		{"negative account", StatusOpen, TicketPatch{CustomerRepIDSet: true, CustomerRepID: tkInt(-1)}, apperr.Invalid, "customerRepID", "", nil},
		{"live channel", StatusOpen, TicketPatch{ChannelID: tkInt(1)}, "", "", StatusOpen, nil},
		{"deleted channel", StatusOpen, TicketPatch{ChannelID: tkInt(2)}, apperr.Invalid, "channelID", "", nil},
		{"unknown channel", StatusOpen, TicketPatch{ChannelID: tkInt(3)}, apperr.Invalid, "channelID", "", nil},
		{"channel zero", StatusOpen, TicketPatch{ChannelID: tkInt(0)}, apperr.Invalid, "channelID", "", nil},
		{"custom fields replaced", StatusOpen, TicketPatch{CustomFields: json.RawMessage(` {"a": 1} `)}, "", "", StatusOpen, func(t *testing.T, got Ticket) {
			if string(got.CustomFields) != `{"a":1}` {
				t.Fatalf("fields %s", got.CustomFields)
			}
		}},
		{"custom fields null", StatusOpen, TicketPatch{CustomFields: json.RawMessage(`null`)}, "", "", StatusOpen, func(t *testing.T, got Ticket) {
			if string(got.CustomFields) != `{}` {
				t.Fatalf("fields %s", got.CustomFields)
			}
		}},
		{"custom fields array", StatusOpen, TicketPatch{CustomFields: json.RawMessage(`[1]`)}, apperr.Invalid, "customFieldsData", "", nil},
		{"nothing to update", StatusOpen, TicketPatch{}, apperr.Invalid, "", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &tkStore{ticket: Ticket{ID: 5, Status: tc.from, Subject: "Old", ChannelID: 1, CustomFields: json.RawMessage(`{"x":2}`),
				CustomerRepID: tkInt(10)}}
			err := NewTickets(st, tkLookups{}).UpdateTicket(context.Background(), 1, 5, tc.patch)
			if tc.code != "" {
				if !apperr.Is(err, tc.code) {
					t.Fatalf("error %v, want %s", err, tc.code)
				}
				tkFields(t, err, tc.field)
				if st.updated != nil {
					t.Fatal("the store changed the ticket")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st.updated.Status != tc.status {
				t.Fatalf("status %s, want %s", st.updated.Status, tc.status)
			}
			if tc.check != nil {
				tc.check(t, *st.updated)
			}
		})
	}
	// A lookup that fails is its error (503), not a validation error.
	st := &tkStore{ticket: Ticket{Status: StatusOpen}}
	err := NewTickets(st, tkLookups{down: true}).UpdateTicket(context.Background(), 1, 5, TicketPatch{ChannelID: tkInt(1)})
	if !apperr.Is(err, apperr.Unavailable) {
		t.Fatalf("lookup down: %v", err)
	}
}

func TestTkCreateTicketWithRep(t *testing.T) {
	in := CreateTicketInput{TicketInput: TicketInput{Subject: "Hi", ChannelID: 1, EndUserID: 3}, CustomerRepID: tkInt(11)}
	st := &tkStore{}
	if _, err := NewTickets(st, tkLookups{}).CreateTicket(context.Background(), 1, in); err != nil {
		t.Fatal(err)
	}
	if st.created == nil || st.created.CustomerRepID == nil || *st.created.CustomerRepID != 11 || st.created.Status != StatusOpen {
		t.Fatalf("created %+v", st.created)
	}
	in.CustomerRepID = tkInt(12)
	_, err := NewTickets(&tkStore{}, tkLookups{}).CreateTicket(context.Background(), 1, in)
	tkFields(t, err, "customerRepID")
	in.CustomerRepID, in.ChannelID = nil, 2
	_, err = NewTickets(&tkStore{}, tkLookups{}).CreateTicket(context.Background(), 1, in)
	tkFields(t, err, "channelID")
}

func TestTkBulkValidation(t *testing.T) {
	many := make([]int64, MaxBulkTickets+1)
	for i := range many {
		many[i] = int64(i + 1)
	}
	cases := []struct {
		name  string
		in    BulkInput
		field string // "" = valid
	}{
		{"close", BulkInput{TicketIDs: []int64{3, 1, 3}, Action: "close"}, ""},
		{"any case", BulkInput{TicketIDs: []int64{1}, Action: " ESCALATE "}, ""},
		{"exactly 500 with duplicates", BulkInput{TicketIDs: append(slices.Clone(many[:MaxBulkTickets]), 1, 2), Action: "reopen"}, ""},
		{"assign", BulkInput{TicketIDs: []int64{1}, Action: "assign", CustomerRepID: tkInt(11)}, ""},
		{"no ids", BulkInput{Action: "close"}, "ticketIDs"},
		{"501 ids", BulkInput{TicketIDs: many, Action: "close"}, "ticketIDs"},
		{"zero id", BulkInput{TicketIDs: []int64{0, 4}, Action: "close"}, "ticketIDs"},
		{"negative id", BulkInput{TicketIDs: []int64{4, -4}, Action: "close"}, "ticketIDs"},
		{"unknown action", BulkInput{TicketIDs: []int64{1}, Action: "delete"}, "action"},
		{"no action", BulkInput{TicketIDs: []int64{1}}, "action"},
		{"assign without account", BulkInput{TicketIDs: []int64{1}, Action: "assign"}, "customerRepID"},
		{"assign an integration", BulkInput{TicketIDs: []int64{1}, Action: "assign", CustomerRepID: tkInt(12)}, "customerRepID"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &tkStore{ticket: Ticket{ID: 1, Status: StatusOpen}}
			err := NewTickets(st, tkLookups{}).BulkUpdate(context.Background(), 1, tc.in)
			if tc.field != "" {
				if !apperr.Is(err, apperr.Invalid) {
					t.Fatalf("error %v", err)
				}
				tkFields(t, err, tc.field)
				if st.bulk != nil {
					t.Fatal("reached the store")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.IsSorted(st.bulk) || len(slices.Compact(slices.Clone(st.bulk))) != len(st.bulk) {
				t.Fatalf("ids %v not sorted and distinct", st.bulk)
			}
		})
	}
}

func TestTkPlanBulk(t *testing.T) {
	ts := []Ticket{{ID: 1, Status: StatusOpen}, {ID: 2, Status: StatusClosed}, {ID: 3, Status: StatusResolved, CustomerRepID: tkInt(7)},
		{ID: 4, Status: StatusEscalated}}
	ids := func(cs []TicketChange) []int64 {
		out := []int64{}
		for _, c := range cs {
			out = append(out, c.Ticket.ID)
		}
		return out
	}
	ch, err := PlanBulk(ts, BulkClose, nil)
	if err != nil || !slices.Equal(ids(ch), []int64{1, 3, 4}) || ch[1].Previous != StatusResolved || ch[1].Ticket.Status != StatusClosed {
		t.Fatalf("close %+v %v", ch, err)
	}
	ch, err = PlanBulk(ts, BulkReopen, nil)
	if err != nil || !slices.Equal(ids(ch), []int64{2, 3, 4}) {
		t.Fatalf("reopen %+v %v", ch, err)
	}
	_, err = PlanBulk(ts, BulkEscalate, nil)
	if !apperr.Is(err, apperr.Conflict) || err.(*apperr.Error).Fields["ticketIDs"] != "cannot become Escalated: 2" {
		t.Fatalf("escalate %v", err)
	}
	ch, err = PlanBulk(ts[2:], BulkEscalate, nil)
	if err != nil || !slices.Equal(ids(ch), []int64{3}) {
		t.Fatalf("escalate %+v %v", ch, err)
	}
	ch, err = PlanBulk(ts, BulkAssign, tkInt(7))
	if err != nil || !slices.Equal(ids(ch), []int64{1, 2, 4}) || *ch[0].Ticket.CustomerRepID != 7 || ch[1].Ticket.Status != StatusClosed {
		t.Fatalf("assign %+v %v", ch, err)
	}
}

func TestTkParseTicketSort(t *testing.T) {
	cases := []struct {
		raw  string
		want TicketSort
		bad  bool
	}{
		{"", TicketSort{By: TicketSortCreated, Desc: true}, false},
		{"dateCreated", TicketSort{By: TicketSortCreated}, false},
		{"-datecreated", TicketSort{By: TicketSortCreated, Desc: true}, false},
		{"dateUpdated", TicketSort{By: TicketSortUpdated}, false},
		{"-DATEUPDATED", TicketSort{By: TicketSortUpdated, Desc: true}, false},
		{"ticketID", TicketSort{By: TicketSortID}, false},
		{"-ticketId", TicketSort{By: TicketSortID, Desc: true}, false},
		{"subject", TicketSort{}, true},
		{"--ticketID", TicketSort{}, true},
		{"+ticketID", TicketSort{}, true},
		{" ticketID", TicketSort{}, true},
		{"-", TicketSort{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.raw, func(t *testing.T) {
			got, err := ParseTicketSort(tc.raw)
			if tc.bad {
				tkFields(t, err, "sort")
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v %v", got, err)
			}
		})
	}
}

func TestTkParseListTime(t *testing.T) {
	d := func(s string) time.Time { v, _ := time.Parse(time.RFC3339Nano, s); return v }
	cases := []struct {
		raw         string
		from, after time.Time
		ok          bool
	}{
		{"2026-01-31", d("2026-01-31T00:00:00Z"), d("2026-02-01T00:00:00Z"), true},
		{"2024-02-29", d("2024-02-29T00:00:00Z"), d("2024-03-01T00:00:00Z"), true},
		{"2026-01-31T10:00:00Z", d("2026-01-31T10:00:00Z"), d("2026-01-31T10:00:00.000001Z"), true},
		{"2026-01-31T10:00:00+02:00", d("2026-01-31T08:00:00Z"), d("2026-01-31T08:00:00.000001Z"), true},
		{"2026-01-31T10:00:00.1234567Z", d("2026-01-31T10:00:00.123456Z"), d("2026-01-31T10:00:00.123457Z"), true},
		{"2026-01-31T10:00:00", d("2026-01-31T10:00:00Z"), d("2026-01-31T10:00:00.000001Z"), true},
		{"2026-02-30", time.Time{}, time.Time{}, false},
		{"2026-1-31", time.Time{}, time.Time{}, false},
		{"31.01.2026", time.Time{}, time.Time{}, false},
		{"yesterday", time.Time{}, time.Time{}, false},
		{"1738310400", time.Time{}, time.Time{}, false},
		{"2026-01-31 10:00:00", time.Time{}, time.Time{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.raw, func(t *testing.T) {
			from, after, ok := ParseListTime(tc.raw)
			if ok != tc.ok || !from.Equal(tc.from) || !after.Equal(tc.after) {
				t.Fatalf("got %v %v %v, want %v %v %v", from, after, ok, tc.from, tc.after, tc.ok)
			}
		})
	}
}

func TestTkFilterStatuses(t *testing.T) {
	open, closed := StatusOpen, StatusClosed
	cases := []struct {
		name string
		f    TicketFilter
		want []Status
	}{
		{"none", TicketFilter{}, Statuses},
		{"status", TicketFilter{Status: &open}, []Status{StatusOpen}},
		{"closed", TicketFilter{IsClosed: tkBool(true)}, []Status{StatusClosed}},
		{"not closed", TicketFilter{IsClosed: tkBool(false)}, []Status{StatusOpen, StatusPending, StatusEscalated, StatusResolved}},
		{"contradiction", TicketFilter{IsClosed: tkBool(true), Status: &open}, nil},
		{"agreement", TicketFilter{IsClosed: tkBool(true), Status: &closed}, []Status{StatusClosed}},
	}
	for _, tc := range cases {
		if got := tc.f.Statuses(); !slices.Equal(got, tc.want) || !tc.f.ByStatusOnly() {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if (TicketFilter{Q: "x"}).ByStatusOnly() || (TicketFilter{TopicID: tkInt(1)}).ByStatusOnly() {
		t.Error("a search or topic filter is not by status only")
	}
}

func TestTkSearchConfig(t *testing.T) {
	if got := SearchConfig("refunds"); got != FallbackSearchConfig {
		t.Errorf("one unrecognised word: %s", got)
	}
	if got := SearchConfig("Meine Rechnung ist leider falsch und die Lieferung kam viel zu spät"); got != "german" {
		t.Errorf("German sentence: %s", got)
	}
	// Remembered: the same answers again, and a full memo starts again.
	if SearchConfig("refunds") != FallbackSearchConfig ||
		SearchConfig("Meine Rechnung ist leider falsch und die Lieferung kam viel zu spät") != "german" {
		t.Error("a remembered query answers otherwise")
	}
	m := &configMemo{max: 2}
	m.put("a", "english")
	m.put("b", "german")
	m.put("c", "french")
	if _, ok := m.get("a"); ok || len(m.m) != 1 {
		t.Errorf("the memo holds %v past its bound", m.m)
	}
	if cfg, ok := m.get("c"); !ok || cfg != "french" {
		t.Errorf("c: %q %v", cfg, ok)
	}
}
