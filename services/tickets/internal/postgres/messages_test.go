package postgres_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/services/tickets/internal/postgres"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// msgEvent is an outbox event with its data left raw.
type msgEvent = contracts.Event[json.RawMessage]

// msgEvents returns the outbox's events of the given types, oldest first.
func msgEvents(t *testing.T, pool *pgxpool.Pool, types ...string) []msgEvent {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT data FROM outbox ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []msgEvent
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			t.Fatal(err)
		}
		var e msgEvent
		if err := json.Unmarshal(data, &e); err != nil {
			t.Fatal(err)
		}
		for _, typ := range types {
			if e.Type == typ {
				out = append(out, e)
			}
		}
	}
	return out
}

func msgData[T any](t *testing.T, e msgEvent) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(e.Data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// msgOpen opens a ticket of customer with a first end-user message.
func msgOpen(t *testing.T, s *postgres.Store, customerID int64, text string) tickets.Message {
	t.Helper()
	u := create(t, s, customerID, "Writer", "")
	m, err := s.OpenTicketWithMessage(context.Background(), customerID,
		tickets.NewTicket{ChannelID: 9, EndUserID: u.ID, Subject: "Help", SearchConfig: tickets.SubjectSearchConfig("Help"), Status: tickets.StatusOpen, CustomFields: json.RawMessage(`{"order":7}`)},
		tickets.MessageInto(tickets.NewMessage{SenderType: tickets.SenderEndUser, Text: text, CustomFields: json.RawMessage(`{"order":7}`)}, storeClock))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func msgStatus(t *testing.T, pool *pgxpool.Pool, ticketID int64) tickets.Status {
	t.Helper()
	var st string
	if err := pool.QueryRow(context.Background(), `SELECT status FROM tickets WHERE ticket_id = $1`, ticketID).Scan(&st); err != nil {
		t.Fatal(err)
	}
	return tickets.Status(st)
}

func msgSetStatus(t *testing.T, pool *pgxpool.Pool, ticketID int64, st tickets.Status) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `UPDATE tickets SET status = $2 WHERE ticket_id = $1`, ticketID, string(st)); err != nil {
		t.Fatal(err)
	}
}

func TestMessageCreateAndList(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	first := msgOpen(t, s, tenantA, "My parcel did not arrive")
	if first.TicketID == 0 || first.SenderType != tickets.SenderEndUser || string(first.CustomFields) != `{"order": 7}` ||
		first.AIReply.Status != tickets.AIReplyNone || first.AIReply.Text != "" || first.Topics != nil || first.Attachments != 0 {
		t.Fatalf("first message %+v", first)
	}
	agent := int64(33)
	second, err := s.AddMessage(ctx, tenantA, first.TicketID, tickets.MessageInto(tickets.NewMessage{SenderType: tickets.SenderAgent,
		SenderAccountID: &agent, Text: "Sorry, we look into it", CustomFields: json.RawMessage(`{}`)}, storeClock))
	if err != nil || second.SenderAccountID == nil || *second.SenderAccountID != agent {
		t.Fatalf("%+v %v", second, err)
	}
	// Another customer's ticket is not found, for adding and listing.
	if _, err := s.AddMessage(ctx, tenantB, first.TicketID, tickets.MessageInto(tickets.NewMessage{SenderType: tickets.SenderEndUser, Text: "x",
		CustomFields: json.RawMessage(`{}`)}, storeClock)); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("foreign ticket: %v", err)
	}
	if _, _, err := s.ListMessages(ctx, tenantB, first.TicketID, paging.Page{Number: 1, Size: 20}); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("foreign list: %v", err)
	}
	if _, err := s.Message(ctx, tenantB, first.ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("foreign message: %v", err)
	}
	items, total, err := s.ListMessages(ctx, tenantA, first.TicketID, paging.Page{Number: 1, Size: 1})
	if err != nil || total != 2 || len(items) != 1 || items[0].ID != first.ID {
		t.Fatalf("page 1: %v %d %v", items, total, err)
	}
	items, _, _ = s.ListMessages(ctx, tenantA, first.TicketID, paging.Page{Number: 2, Size: 1})
	if len(items) != 1 || items[0].ID != second.ID {
		t.Fatalf("page 2: %v", items)
	}
	// One ticket.created, two ticket.message.created.
	if evs := msgEvents(t, pool, contracts.EventTicketCreated, contracts.EventMessageCreated); len(evs) != 3 ||
		evs[0].Type != contracts.EventTicketCreated || msgData[contracts.MessageChanged](t, evs[2]).MessageID != second.ID {
		t.Fatalf("events %+v", evs)
	}
}

// A ticket whose end user is not the customer's is refused with nothing
// written: neither ticket nor message.
func TestOpenTicketWithForeignEndUser(t *testing.T) {
	s, pool := newStore(t)
	u := create(t, s, tenantB, "Other", "")
	_, err := s.OpenTicketWithMessage(context.Background(), tenantA,
		tickets.NewTicket{ChannelID: 1, EndUserID: u.ID, Subject: "x", SearchConfig: tickets.SubjectSearchConfig("x"), Status: tickets.StatusOpen, CustomFields: json.RawMessage(`{}`)},
		tickets.MessageInto(tickets.NewMessage{SenderType: tickets.SenderEndUser, Text: "x", CustomFields: json.RawMessage(`{}`)}, storeClock))
	if e := wantCode(t, err, apperr.Invalid); e.Fields["endUserID"] == "" {
		t.Fatalf("%v", err)
	}
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM tickets) + (SELECT count(*) FROM ticket_messages)`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows, %v", n, err)
	}
}

// The store writes what tickets.AddToTicket decides (TestAddToTicket has
// the rule for every state and sender): an agent's message leaves a Closed
// ticket Closed, with no ticket.updated; an end user's reopens it, with
// ticket.updated carrying the previous state.
func TestMessageReopens(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	m := msgOpen(t, s, tenantA, "first")
	msgSetStatus(t, pool, m.TicketID, tickets.StatusClosed)
	add := func(sender tickets.SenderType) {
		t.Helper()
		if _, err := s.AddMessage(ctx, tenantA, m.TicketID, tickets.MessageInto(tickets.NewMessage{SenderType: sender, Text: "again",
			CustomFields: json.RawMessage(`{}`)}, storeClock)); err != nil {
			t.Fatal(err)
		}
	}
	before := len(msgEvents(t, pool, contracts.EventTicketUpdated))
	add(tickets.SenderAgent)
	if got, n := msgStatus(t, pool, m.TicketID), len(msgEvents(t, pool, contracts.EventTicketUpdated)); got != tickets.StatusClosed || n != before {
		t.Fatalf("after an agent's message: %s, %d ticket.updated (was %d)", got, n, before)
	}
	add(tickets.SenderEndUser)
	if got := msgStatus(t, pool, m.TicketID); got != tickets.StatusOpen {
		t.Fatalf("after an end user's message: %s", got)
	}
	evs := msgEvents(t, pool, contracts.EventTicketUpdated)
	if len(evs) != before+1 {
		t.Fatalf("%d ticket.updated, want %d", len(evs), before+1)
	}
	if d := msgData[contracts.TicketChanged](t, evs[len(evs)-1]); d.PreviousStatus != "Closed" || d.Status != "Open" || d.IsClosed {
		t.Fatalf("ticket.updated %+v", d)
	}
}

// sendReply sends the message's reply as the service does
// (tickets.PlanReply decides under the store's lock).
func sendReply(ctx context.Context, s *postgres.Store, customerID, id int64, in tickets.ReplyInput) (tickets.Message, error) {
	return s.SendReply(ctx, customerID, id, func(m tickets.Message, t tickets.Ticket) (tickets.ReplyPlan, error) {
		return tickets.PlanReply(m, t, in, clock)
	})
}

// escalate escalates the message as the service does
// (tickets.PlanEscalation decides under the store's lock).
func escalate(ctx context.Context, s *postgres.Store, customerID, id int64, e tickets.Escalation) error {
	return s.EscalateMessage(ctx, customerID, id, func(_ tickets.Message, t tickets.Ticket) (tickets.EscalationPlan, error) {
		return tickets.PlanEscalation(t, e, clock)
	})
}

func msgPatch(t *testing.T, s *postgres.Store, customerID, id int64, body string) error {
	t.Helper()
	p, err := tickets.ParseMessagePatch([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return s.PatchMessage(context.Background(), customerID, id, func(m tickets.Message) (tickets.MessageChange, error) {
		return p.Apply(m, clock)
	})
}

func TestPatchMessage(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	m := msgOpen(t, s, tenantA, "Das Paket ist nicht angekommen und ich warte seit einer Woche")
	var cfg string
	if err := pool.QueryRow(ctx, `SELECT search_config::text FROM ticket_messages WHERE message_id = $1`, m.ID).Scan(&cfg); err != nil || cfg != "german" {
		t.Fatalf("config %q %v", cfg, err)
	}
	if err := msgPatch(t, s, tenantB, m.ID, `{"message":"x"}`); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("foreign: %v", err)
	}
	if err := msgPatch(t, s, tenantA, m.ID, `{"message":"The parcel never arrived, I have been waiting for a whole week",
		"aiReply":{"text":"We are sorry"},"customFieldsData":{"order":null,"tracking":"X1"}}`); err != nil {
		t.Fatal(err)
	}
	got, err := s.Message(ctx, tenantA, m.ID)
	if err != nil || got.Text != "The parcel never arrived, I have been waiting for a whole week" || got.AIReply.Text != "We are sorry" ||
		got.AIReply.Status != tickets.AIReplyPrepared || got.AIReply.CreatedAt == nil || !got.AIReply.CreatedAt.Equal(clock) ||
		string(got.CustomFields) != `{"tracking": "X1"}` {
		t.Fatalf("patched %+v %v", got, err)
	}
	// The new text is found by full-text search in its language.
	var found bool
	if err := pool.QueryRow(ctx, `SELECT search_config::text = 'english' AND search @@ plainto_tsquery('english', 'waited parcels')
		FROM ticket_messages WHERE message_id = $1`, m.ID).Scan(&found); err != nil || !found {
		t.Fatalf("re-indexed: %v %v", found, err)
	}
	// An empty patch changes nothing and writes no event.
	if err := msgPatch(t, s, tenantA, m.ID, `{}`); err != nil {
		t.Fatal(err)
	}
	if evs := msgEvents(t, pool, contracts.EventMessageUpdated); len(evs) != 1 || evs[0].Data == nil ||
		msgData[contracts.MessageChanged](t, evs[0]).Language != "en" {
		t.Fatalf("updated events %+v", evs)
	}
	// Cleared, then a sent reply cannot change.
	if err := msgPatch(t, s, tenantA, m.ID, `{"aiReply":{"text":null}}`); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.Message(ctx, tenantA, m.ID); got.AIReply.Status != tickets.AIReplyNone || got.AIReply.Text != "" || got.AIReply.CreatedAt != nil {
		t.Fatalf("cleared %+v", got)
	}
	if _, err := pool.Exec(ctx, `UPDATE ticket_messages SET ai_reply_text = 'x', ai_reply_status = 'sent' WHERE message_id = $1`, m.ID); err != nil {
		t.Fatal(err)
	}
	if err := msgPatch(t, s, tenantA, m.ID, `{"aiReply":{"text":"again"}}`); !apperr.Is(err, apperr.Conflict) {
		t.Fatalf("sent reply: %v", err)
	}
}

func TestDeleteMessage(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	m := msgOpen(t, s, tenantA, "with an attachment")
	if _, err := pool.Exec(ctx, `INSERT INTO attachments (customer_id, message_id, file_name, content_type, size, sha256, object_key)
		VALUES ($1, $2, 'a.txt', 'text/plain', 1, 'x', 'key-1')`, tenantA, m.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Message(ctx, tenantA, m.ID); got.Attachments != 1 {
		t.Fatalf("attachments %d", got.Attachments)
	}
	if err := s.DeleteMessage(ctx, tenantB, m.ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("foreign: %v", err)
	}
	if err := s.DeleteMessage(ctx, tenantA, m.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Message(ctx, tenantA, m.ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("deleted: %v", err)
	}
	if err := s.DeleteMessage(ctx, tenantA, m.ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("again: %v", err)
	}
	var garbage string
	if err := pool.QueryRow(ctx, `SELECT object_key FROM blob_garbage`).Scan(&garbage); err != nil || garbage != "key-1" {
		t.Fatalf("blob garbage %q %v", garbage, err)
	}
	if evs := msgEvents(t, pool, contracts.EventMessageDeleted); len(evs) != 1 || msgData[contracts.MessageChanged](t, evs[0]).MessageID != m.ID {
		t.Fatalf("events %+v", evs)
	}
}

func msgAssignment(names map[int64]string, actions map[int64][]contracts.LinkedAction, ids ...int64) tickets.TopicAssignment {
	return tickets.TopicAssignment{TopicIDs: ids, Names: names, NamesAsOf: clock.Add(-time.Minute), Actions: actions, Source: tickets.SourceManual}
}

func msgTopicNames(m tickets.Message) []string {
	var out []string
	for _, t := range m.Topics {
		out = append(out, t.TopicName)
	}
	return out
}

func TestAssignTopics(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	m := msgOpen(t, s, tenantA, "topics")
	names := map[int64]string{1: "Billing", 2: "Shipping", 3: "Returns"}
	actions := map[int64][]contracts.LinkedAction{
		1: {{TopicActionID: 11, ActionID: 101, Name: "Notify", HookName: "notify", Priority: 2}},
		2: {{TopicActionID: 21, ActionID: 201, Priority: 1}, {TopicActionID: 22, ActionID: 202, Priority: 3}},
		3: {{TopicActionID: 31, ActionID: 301, Priority: 0}},
	}
	pick := func(ids ...int64) map[int64]string {
		out := map[int64]string{}
		for _, id := range ids {
			out[id] = names[id]
		}
		return out
	}
	if err := s.AssignTopics(ctx, tenantB, m.ID, msgAssignment(pick(1), actions, 1)); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("foreign: %v", err)
	}
	if err := s.AssignTopics(ctx, tenantA, m.ID, msgAssignment(pick(1, 2), actions, 2, 1)); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Message(ctx, tenantA, m.ID)
	if !reflect.DeepEqual(msgTopicNames(got), []string{"Shipping", "Billing"}) {
		t.Fatalf("topics %+v", got.Topics)
	}
	firstIDs := got.Topics
	// The same list again: no change, no events.
	if err := s.AssignTopics(ctx, tenantA, m.ID, msgAssignment(pick(1, 2), actions, 1, 2)); err != nil {
		t.Fatal(err)
	}
	// Keep 1, drop 2, add 3: only 3's action triggers; 1 keeps its id.
	if err := s.AssignTopics(ctx, tenantA, m.ID, msgAssignment(pick(1, 3), actions, 1, 3)); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Message(ctx, tenantA, m.ID)
	if !reflect.DeepEqual(msgTopicNames(got), []string{"Billing", "Returns"}) || got.Topics[0].ID != firstIDs[1].ID {
		t.Fatalf("topics %+v (before %+v)", got.Topics, firstIDs)
	}
	assigned := msgEvents(t, pool, contracts.EventTopicsAssigned)
	if len(assigned) != 2 || !reflect.DeepEqual(msgData[contracts.TopicsAssigned](t, assigned[1]),
		contracts.TopicsAssigned{MessageID: m.ID, TicketID: m.TicketID, TopicIDs: []int64{1, 3}, Source: "manual"}) {
		t.Fatalf("assigned %+v", assigned)
	}
	var order []int64
	for _, e := range msgEvents(t, pool, contracts.EventTopicActionTriggered) {
		d := msgData[contracts.TopicActionTriggered](t, e)
		if d.MessageID != m.ID || d.TicketID != m.TicketID {
			t.Fatalf("triggered %+v", d)
		}
		order = append(order, d.TopicActionID)
	}
	if !reflect.DeepEqual(order, []int64{21, 11, 22, 31}) {
		t.Fatalf("triggered %v", order)
	}
	// [] clears.
	if err := s.AssignTopics(ctx, tenantA, m.ID, msgAssignment(nil, actions)); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.Message(ctx, tenantA, m.ID); len(got.Topics) != 0 {
		t.Fatalf("cleared %+v", got.Topics)
	}
}

// Detection never fires an action that requires confirmation; an agent
// putting the detected list fires exactly those, once, marked confirmed.
func TestAssignTopicsHoldsActionsForConfirmation(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	m := msgOpen(t, s, tenantA, "confirmation")
	names := map[int64]string{1: "Refunds"}
	actions := map[int64][]contracts.LinkedAction{1: {
		{TopicActionID: 11, ActionID: 101, Name: "Tag", Priority: 1},
		{TopicActionID: 12, ActionID: 102, Name: "Refund", Priority: 2, RequiresConfirmation: true},
	}}
	auto := msgAssignment(names, actions, 1)
	auto.Source = tickets.SourceAuto
	if err := s.AssignTopics(ctx, tenantA, m.ID, auto); err != nil {
		t.Fatal(err)
	}
	fired := func() []contracts.TopicActionTriggered {
		var out []contracts.TopicActionTriggered
		for _, e := range msgEvents(t, pool, contracts.EventTopicActionTriggered) {
			out = append(out, msgData[contracts.TopicActionTriggered](t, e))
		}
		return out
	}
	if got := fired(); len(got) != 1 || got[0].TopicActionID != 11 || got[0].Source != tickets.SourceAuto {
		t.Fatalf("after detection %+v, want only 11", got)
	}
	for range 2 { // the second time changes nothing
		if err := s.AssignTopics(ctx, tenantA, m.ID, msgAssignment(names, actions, 1)); err != nil {
			t.Fatal(err)
		}
	}
	got := fired()
	if len(got) != 2 || got[1].TopicActionID != 12 || !got[1].Confirmed || got[1].Source != tickets.SourceManual {
		t.Fatalf("after confirmation %+v, want 11 then 12 confirmed", got)
	}
}

// Eight agents confirming the assistant's topics at once fire the held
// action once: the confirmations queue on the ticket's lock.
func TestConfirmationFiresOnceInParallel(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	m := msgOpen(t, s, tenantA, "parallel confirmation")
	names := map[int64]string{1: "Refunds"}
	actions := map[int64][]contracts.LinkedAction{1: {
		{TopicActionID: 12, ActionID: 102, Name: "Refund", Priority: 2, RequiresConfirmation: true},
	}}
	auto := msgAssignment(names, actions, 1)
	auto.Source = tickets.SourceAuto
	if err := s.AssignTopics(ctx, tenantA, m.ID, auto); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.AssignTopics(ctx, tenantA, m.ID, msgAssignment(names, actions, 1)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := msgEvents(t, pool, contracts.EventTopicActionTriggered); len(got) != 1 {
		t.Fatalf("%d actions fired, want the confirmed one once", len(got))
	}
}

// Names follow topic.updated in occurredAt order, whatever the order of
// delivery; a deleted topic leaves every message and cannot come back.
func TestTopicNamesFollowEvents(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	m := msgOpen(t, s, tenantA, "topics")
	other := msgOpen(t, s, tenantB, "topics of another customer")
	if err := s.AssignTopics(ctx, tenantA, m.ID, msgAssignment(map[int64]string{1: "Billing", 2: "Shipping"}, nil, 1, 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.AssignTopics(ctx, tenantB, other.ID, msgAssignment(map[int64]string{1: "Theirs"}, nil, 1)); err != nil {
		t.Fatal(err)
	}
	names := func(id int64, cid int64) []string {
		got, err := s.Message(ctx, cid, id)
		if err != nil {
			t.Fatal(err)
		}
		return msgTopicNames(got)
	}
	later, earlier := clock.Add(time.Minute), clock.Add(-time.Hour)
	if err := s.RenameTopic(ctx, tenantA, 1, "Invoices", later); err != nil {
		t.Fatal(err)
	}
	if err := s.RenameTopic(ctx, tenantA, 1, "Stale", earlier); err != nil {
		t.Fatal(err)
	}
	if got := names(m.ID, tenantA); !reflect.DeepEqual(got, []string{"Invoices", "Shipping"}) {
		t.Fatalf("renamed %v", got)
	}
	// An assignment with a name read before the rename keeps the newer one.
	if err := s.AssignTopics(ctx, tenantA, m.ID, msgAssignment(map[int64]string{1: "Billing"}, nil, 1)); err != nil {
		t.Fatal(err)
	}
	if got := names(m.ID, tenantA); !reflect.DeepEqual(got, []string{"Invoices"}) {
		t.Fatalf("after assignment %v", got)
	}
	if got := names(other.ID, tenantB); !reflect.DeepEqual(got, []string{"Theirs"}) {
		t.Fatalf("other customer %v", got)
	}
	// Deleted (twice: redelivery), then renamed late and assigned again.
	for range 2 {
		if err := s.ForgetTopic(ctx, tenantA, 1, later); err != nil {
			t.Fatal(err)
		}
	}
	if got := names(m.ID, tenantA); len(got) != 0 {
		t.Fatalf("after deletion %v", got)
	}
	if err := s.RenameTopic(ctx, tenantA, 1, "Zombie", later.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	err := s.AssignTopics(ctx, tenantA, m.ID, msgAssignment(map[int64]string{1: "Invoices"}, nil, 1))
	if e := wantCode(t, err, apperr.Invalid); e.Fields["topicIds"] != "unknown topics: 1" {
		t.Fatalf("%v", err)
	}
	if got := names(other.ID, tenantB); !reflect.DeepEqual(got, []string{"Theirs"}) {
		t.Fatalf("other customer after deletion %v", got)
	}
	// A topic first heard of through topic.deleted is a tombstone at once.
	if err := s.ForgetTopic(ctx, tenantA, 5, later); err != nil {
		t.Fatal(err)
	}
	if err := s.AssignTopics(ctx, tenantA, m.ID, msgAssignment(map[int64]string{5: "Five"}, nil, 5)); !apperr.Is(err, apperr.Invalid) {
		t.Fatalf("tombstone assigned: %v", err)
	}
}

// Concurrent assignments to one message: the result is one of the lists,
// never a mix, and every call succeeds (they queue on the ticket's lock).
func TestAssignTopicsConcurrently(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	m := msgOpen(t, s, tenantA, "race")
	lists := [][]int64{{1, 2, 3}, {4, 5}, {6}, {2, 4, 6}, {}}
	names := map[int64]string{1: "a", 2: "b", 3: "c", 4: "d", 5: "e", 6: "f"}
	var wg sync.WaitGroup
	errs := make(chan error, 10*len(lists))
	for range 10 {
		for _, l := range lists {
			wg.Go(func() {
				ns := map[int64]string{}
				for _, id := range l {
					ns[id] = names[id]
				}
				errs <- s.AssignTopics(ctx, tenantA, m.ID, msgAssignment(ns, nil, l...))
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, _ := s.Message(ctx, tenantA, m.ID)
	var ids []int64
	for _, tp := range got.Topics {
		ids = append(ids, tp.TopicID)
	}
	for _, l := range lists {
		if len(l) == len(ids) && (len(l) == 0 || reflect.DeepEqual(sortedCopy(l), sortedCopy(ids))) {
			return
		}
	}
	t.Fatalf("topics %v are none of %v", ids, lists)
}

func sortedCopy(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

func TestSendReply(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	m := msgOpen(t, s, tenantA, "question")
	msgSetStatus(t, pool, m.TicketID, tickets.StatusPending)
	if _, err := sendReply(ctx, s, tenantA, m.ID, tickets.ReplyInput{AccountID: 5}); !apperr.Is(err, apperr.Conflict) {
		t.Fatalf("no reply prepared: %v", err)
	}
	if err := msgPatch(t, s, tenantA, m.ID, `{"aiReply":{"text":"the answer"}}`); err != nil {
		t.Fatal(err)
	}
	if _, err := sendReply(ctx, s, tenantB, m.ID, tickets.ReplyInput{AccountID: 5}); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("foreign: %v", err)
	}
	sent, err := sendReply(ctx, s, tenantA, m.ID, tickets.ReplyInput{AccountID: 5})
	if err != nil || sent.Text != "the answer" || sent.SenderType != tickets.SenderAgent || sent.SenderAccountID == nil ||
		*sent.SenderAccountID != 5 || sent.TicketID != m.TicketID {
		t.Fatalf("sent %+v %v", sent, err)
	}
	got, _ := s.Message(ctx, tenantA, m.ID)
	if got.AIReply.Status != tickets.AIReplySent || got.AIReply.Text != "the answer" {
		t.Fatalf("reply %+v", got)
	}
	// An agent's message leaves the ticket's state alone.
	if st := msgStatus(t, pool, m.TicketID); st != tickets.StatusPending {
		t.Fatalf("status %s", st)
	}
	// No second send, with or without a modified answer.
	for _, in := range []tickets.ReplyInput{{AccountID: 5}, {AccountID: 5, ModifiedAnswer: "other"}} {
		if _, err := sendReply(ctx, s, tenantA, m.ID, in); !apperr.Is(err, apperr.Conflict) {
			t.Fatalf("second send %+v: %v", in, err)
		}
	}
	// A modified answer on a message without a prepared reply.
	m2, _ := s.AddMessage(ctx, tenantA, m.TicketID, tickets.MessageInto(tickets.NewMessage{SenderType: tickets.SenderEndUser, Text: "more",
		CustomFields: json.RawMessage(`{}`)}, storeClock))
	if _, err := sendReply(ctx, s, tenantA, m2.ID, tickets.ReplyInput{AccountID: 5, ModifiedAnswer: "my own"}); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.Message(ctx, tenantA, m2.ID); got.AIReply.Status != tickets.AIReplyModified || got.AIReply.Text != "my own" || got.AIReply.CreatedAt == nil {
		t.Fatalf("modified %+v", got)
	}
	evs := msgEvents(t, pool, contracts.EventReplySent)
	if len(evs) != 2 {
		t.Fatalf("events %+v", evs)
	}
	if d := msgData[contracts.ReplySent](t, evs[0]); d.MessageID != sent.ID || d.InReplyToID != m.ID || d.Text != "the answer" ||
		d.Modified || d.ChannelID != 9 {
		t.Fatalf("reply.sent %+v", d)
	}
	if d := msgData[contracts.ReplySent](t, evs[1]); !d.Modified || d.InReplyToID != m2.ID {
		t.Fatalf("reply.sent %+v", d)
	}
}

// Ten sends of one prepared reply at once: exactly one is sent.
func TestSendReplyConcurrently(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	m := msgOpen(t, s, tenantA, "question")
	if err := msgPatch(t, s, tenantA, m.ID, `{"aiReply":{"text":"once"}}`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[apperr.Code]int{}
	for range 10 {
		wg.Go(func() {
			_, err := sendReply(ctx, s, tenantA, m.ID, tickets.ReplyInput{AccountID: 1})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				codes["ok"]++
			} else {
				codes[apperr.CodeOf(err)]++
			}
		})
	}
	wg.Wait()
	if codes["ok"] != 1 || codes[apperr.Conflict] != 9 {
		t.Fatalf("results %v", codes)
	}
	if n := len(msgEvents(t, pool, contracts.EventReplySent)); n != 1 {
		t.Fatalf("%d reply.sent events", n)
	}
}

func TestEscalateMessage(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	m := msgOpen(t, s, tenantA, "escalate me")
	e := tickets.Escalation{Comment: "The AI was wrong", Email: "lead@example.com"}
	if err := escalate(ctx, s, tenantB, m.ID, e); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("foreign: %v", err)
	}
	if err := escalate(ctx, s, tenantA, m.ID, e); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Message(ctx, tenantA, m.ID)
	if !got.IsEscalated || msgStatus(t, pool, m.TicketID) != tickets.StatusEscalated {
		t.Fatalf("escalated %+v", got)
	}
	var comment, email string
	if err := pool.QueryRow(ctx, `SELECT comment, email FROM feedback_comments WHERE ticket_id = $1 AND message_id = $2`,
		m.TicketID, m.ID).Scan(&comment, &email); err != nil || comment != e.Comment || email != e.Email {
		t.Fatalf("comment %q %q %v", comment, email, err)
	}
	if evs := msgEvents(t, pool, contracts.EventMessageEscalated, contracts.EventTicketUpdated); len(evs) != 2 ||
		evs[0].Type != contracts.EventTicketUpdated || msgData[contracts.MessageEscalated](t, evs[1]).Email != e.Email {
		t.Fatalf("events %+v", evs)
	}
	// A Closed ticket cannot be escalated, and nothing changes.
	m2 := msgOpen(t, s, tenantA, "closed")
	msgSetStatus(t, pool, m2.TicketID, tickets.StatusClosed)
	if err := escalate(ctx, s, tenantA, m2.ID, e); !apperr.Is(err, apperr.Conflict) {
		t.Fatalf("closed: %v", err)
	}
	if got, _ := s.Message(ctx, tenantA, m2.ID); got.IsEscalated {
		t.Fatal("escalated on a closed ticket")
	}
}

func TestRequestTopicDetection(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	m := msgOpen(t, s, tenantA, "detect")
	if err := s.RequestTopicDetection(ctx, tenantB, m.ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("foreign: %v", err)
	}
	if err := s.RequestTopicDetection(ctx, tenantA, m.ID); err != nil {
		t.Fatal(err)
	}
	evs := msgEvents(t, pool, contracts.EventTopicDetectionRequested)
	if len(evs) != 1 || msgData[contracts.TopicDetectionRequested](t, evs[0]) != (contracts.TopicDetectionRequested{MessageID: m.ID, TicketID: m.TicketID}) {
		t.Fatalf("events %+v", evs)
	}
}
