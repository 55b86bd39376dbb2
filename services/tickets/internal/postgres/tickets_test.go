package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/paging"
	pgpostgres "supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/services/tickets/internal/postgres"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// tkTicket inserts an Open ticket of the customer's end user.
func tkTicket(t *testing.T, s *postgres.Store, customerID, endUserID, channelID int64, subject string, status tickets.Status) tickets.TicketDetails {
	t.Helper()
	d, err := s.CreateTicket(context.Background(), customerID, tickets.NewTicket{ChannelID: channelID, EndUserID: endUserID,
		Subject: subject, SearchConfig: tickets.SubjectSearchConfig(subject), Status: status, CustomFields: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// tkMessage inserts a message as the Messages API will (search vector in
// English and simple).
func tkMessage(t *testing.T, pool *pgxpool.Pool, customerID, ticketID int64, sender tickets.SenderType, text string) int64 {
	t.Helper()
	var id int64
	err := pool.QueryRow(context.Background(), `INSERT INTO ticket_messages (customer_id, ticket_id, sender_type, message, search_config, search)
		VALUES ($1, $2, $3, $4, 'english', to_tsvector('english', $4) || to_tsvector('simple', $4)) RETURNING message_id`,
		customerID, ticketID, string(sender), text).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func tkList(t *testing.T, s *postgres.Store, customerID int64, f tickets.TicketFilter, p paging.Page) ([]int64, int) {
	t.Helper()
	if f.Sort.By == "" {
		f.Sort = tickets.TicketSort{By: tickets.TicketSortCreated, Desc: true}
	}
	if f.Q != "" {
		f.SearchConfig = tickets.SearchConfig(f.Q)
	}
	l, err := s.ListTickets(context.Background(), customerID, f, p)
	if err != nil {
		t.Fatal(err)
	}
	ids := []int64{}
	for _, it := range l.Items {
		if it.CustomerID != customerID {
			t.Fatalf("ticket %d of customer %d listed for %d", it.ID, it.CustomerID, customerID)
		}
		ids = append(ids, it.ID)
	}
	return ids, l.Total
}

// tkCounts compares the counters with a real count, per customer and
// status, and per customer, channel or rep, and status.
func tkCounts(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	var diff int
	err := pool.QueryRow(context.Background(), `SELECT count(*) FROM (
		SELECT customer_id, status, sum(n) AS n FROM ticket_counts GROUP BY 1, 2 HAVING sum(n) <> 0
		EXCEPT ALL SELECT customer_id, status, count(*) FROM tickets GROUP BY 1, 2) x`).Scan(&diff)
	if err != nil {
		t.Fatal(err)
	}
	var diff2 int
	err = pool.QueryRow(context.Background(), `SELECT count(*) FROM (
		SELECT customer_id, status, count(*) FROM tickets GROUP BY 1, 2
		EXCEPT ALL SELECT customer_id, status, sum(n) AS n FROM ticket_counts GROUP BY 1, 2 HAVING sum(n) <> 0) x`).Scan(&diff2)
	if err != nil {
		t.Fatal(err)
	}
	if diff != 0 || diff2 != 0 {
		t.Fatalf("ticket_counts differ from the tickets (%d, %d rows)", diff, diff2)
	}
	// The per-channel and per-rep counters (015), both ways.
	const real = `SELECT customer_id, 'channel' AS kind, channel_id AS value, status, count(*) AS n FROM tickets GROUP BY 1, 2, 3, 4
		UNION ALL SELECT customer_id, 'rep', customer_rep_id, status, count(*) FROM tickets WHERE customer_rep_id IS NOT NULL
		GROUP BY 1, 2, 3, 4`
	const kept = `SELECT customer_id, kind, value, status, sum(n) AS n FROM ticket_filter_counts GROUP BY 1, 2, 3, 4 HAVING sum(n) <> 0`
	err = pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM (`+kept+` EXCEPT ALL SELECT * FROM (`+real+`) r) x),
		(SELECT count(*) FROM (SELECT * FROM (`+real+`) r EXCEPT ALL `+kept+`) y)`).Scan(&diff, &diff2)
	if err != nil {
		t.Fatal(err)
	}
	if diff != 0 || diff2 != 0 {
		t.Fatalf("ticket_filter_counts differ from the tickets (%d, %d rows)", diff, diff2)
	}
}

func tkEventTypes(t *testing.T, pool *pgxpool.Pool) ([]string, []contracts.TicketChanged) {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT data FROM outbox ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var types []string
	var data []contracts.TicketChanged
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var e contracts.Event[contracts.TicketChanged]
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(e.Type, "ticket.") {
			types = append(types, e.Type)
			data = append(data, e.Data)
		}
	}
	return types, data
}

func TestTkTicketLifecycle(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	u := create(t, s, tenantA, "Ada", "ada@example.com")
	d := tkTicket(t, s, tenantA, u.ID, 7, "Printer on fire", tickets.StatusOpen)
	if d.ID == 0 || d.Status != tickets.StatusOpen || d.Token == "" || len(d.FeedbackComments) != 0 || d.FeedbackComments == nil {
		t.Fatalf("created %+v", d)
	}
	got, err := s.TicketDetails(ctx, tenantA, d.ID)
	if err != nil || got.Subject != "Printer on fire" || got.ChannelID != 7 || got.EndUserID != u.ID || got.CustomerRepID != nil {
		t.Fatalf("get %+v %v", got, err)
	}
	_, err = s.TicketDetails(ctx, tenantB, d.ID)
	wantCode(t, err, apperr.NotFound)
	// Another customer's end user is refused on endUserID.
	_, err = s.CreateTicket(ctx, tenantB, tickets.NewTicket{ChannelID: 1, EndUserID: u.ID, Subject: "x", Status: tickets.StatusOpen,
		SearchConfig: "simple", CustomFields: json.RawMessage(`{}`)})
	if e := wantCode(t, err, apperr.Invalid); e.Fields["endUserID"] == "" {
		t.Fatalf("fields %v", e.Fields)
	}

	// Feedback comments come with the ticket, oldest first.
	m := tkMessage(t, pool, tenantA, d.ID, tickets.SenderAI, "Have you tried turning it off?")
	for i, c := range []string{"wrong answer", "still wrong"} {
		if _, err := pool.Exec(ctx, `INSERT INTO feedback_comments (customer_id, ticket_id, message_id, comment, email, created_at)
			VALUES ($1, $2, $3, $4, 'boss@example.com', $5)`, tenantA, d.ID, m, c, clock.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	got, _ = s.TicketDetails(ctx, tenantA, d.ID)
	if len(got.FeedbackComments) != 2 || got.FeedbackComments[0].Comment != "wrong answer" || got.FeedbackComments[1].MessageID != m ||
		!got.FeedbackComments[1].CreatedAt.Equal(clock.Add(time.Minute)) {
		t.Fatalf("feedback %+v", got.FeedbackComments)
	}
	// The list reads the same ticket, comments and all (its own statement),
	// but its search configuration.
	got.SearchConfig = ""
	if l, err := s.ListTickets(ctx, tenantA, tickets.TicketFilter{}, paging.Page{Number: 1, Size: 100}); err != nil {
		t.Fatal(err)
	} else if i := slices.IndexFunc(l.Items, func(x tickets.TicketDetails) bool { return x.ID == d.ID }); i < 0 ||
		!reflect.DeepEqual(l.Items[i], got) {
		t.Fatalf("listed %+v, want %+v", l.Items, got)
	}

	// An update: the subject is searchable under its new words.
	rep := int64(42)
	err = s.UpdateTicket(ctx, tenantA, d.ID, func(t tickets.Ticket) (tickets.Ticket, error) {
		t.Subject, t.Status, t.CustomerRepID = "Scanner jammed", tickets.StatusPending, &rep
		t.SubjectConfig = tickets.SubjectSearchConfig(t.Subject)
		return t, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = s.TicketDetails(ctx, tenantA, d.ID)
	if got.Subject != "Scanner jammed" || got.Status != tickets.StatusPending || got.CustomerRepID == nil || *got.CustomerRepID != 42 {
		t.Fatalf("updated %+v", got)
	}
	if ids, _ := tkList(t, s, tenantA, tickets.TicketFilter{Q: "scanner"}, paging.Page{Number: 1, Size: 20}); len(ids) != 1 {
		t.Fatalf("search new subject: %v", ids)
	}
	if ids, _ := tkList(t, s, tenantA, tickets.TicketFilter{Q: "printer"}, paging.Page{Number: 1, Size: 20}); len(ids) != 0 {
		t.Fatalf("search old subject: %v", ids)
	}
	// A change that changes nothing writes no event; an error rolls back.
	if err := s.UpdateTicket(ctx, tenantA, d.ID, func(t tickets.Ticket) (tickets.Ticket, error) { return t, nil }); err != nil {
		t.Fatal(err)
	}
	err = s.UpdateTicket(ctx, tenantA, d.ID, func(t tickets.Ticket) (tickets.Ticket, error) {
		return t, tickets.TransitionError(t.Status, tickets.StatusClosed)
	})
	wantCode(t, err, apperr.Conflict)
	err = s.UpdateTicket(ctx, tenantB, d.ID, func(t tickets.Ticket) (tickets.Ticket, error) { return t, nil })
	wantCode(t, err, apperr.NotFound)
	wantCode(t, s.DeleteTicket(ctx, tenantB, d.ID), apperr.NotFound)
	tkCounts(t, pool)

	// Delete takes the messages, feedback and attachments (whose bytes are
	// queued for deletion).
	if _, err := pool.Exec(ctx, `INSERT INTO attachments (customer_id, message_id, file_name, content_type, size, sha256, object_key)
		VALUES ($1, $2, 'a.txt', 'text/plain', 1, 'x', 'key-1')`, tenantA, m); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTicket(ctx, tenantA, d.ID); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.DeleteTicket(ctx, tenantA, d.ID), apperr.NotFound)
	var left, garbage int
	_ = pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM ticket_messages) + (SELECT count(*) FROM feedback_comments)
		+ (SELECT count(*) FROM attachments), (SELECT count(*) FROM blob_garbage WHERE object_key = 'key-1')`).Scan(&left, &garbage)
	if left != 0 || garbage != 1 {
		t.Fatalf("after delete: %d rows left, %d blobs queued", left, garbage)
	}
	tkCounts(t, pool)

	types, data := tkEventTypes(t, pool)
	want := []string{contracts.EventTicketCreated, contracts.EventTicketUpdated, contracts.EventTicketDeleted}
	if !slices.Equal(types, want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	if data[1].PreviousStatus != "Open" || data[1].Status != "Pending" || data[1].Subject != "Scanner jammed" ||
		data[1].CustomerRepID == nil || data[2].TicketID != d.ID {
		t.Fatalf("event data %+v", data)
	}
}

func TestTkListFiltersSortAndSearch(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	u1 := create(t, s, tenantA, "Ada", "")
	u2 := create(t, s, tenantA, "Bob", "")
	ub := create(t, s, tenantB, "Eve", "")
	type spec struct {
		subject string
		user    int64
		channel int64
		status  tickets.Status
		day     int
	}
	specs := []spec{
		{"Refund for order 1001", u1.ID, 1, tickets.StatusOpen, 1},
		{"Login does not work", u1.ID, 1, tickets.StatusPending, 2},
		{"Invoice address wrong", u2.ID, 2, tickets.StatusClosed, 3},
		{"Rechnung ist falsch und die Lieferung kam zu spät", u2.ID, 2, tickets.StatusEscalated, 4},
		{"Password reset", u2.ID, 3, tickets.StatusResolved, 5},
	}
	var ids []int64
	for _, sp := range specs {
		d := tkTicket(t, s, tenantA, sp.user, sp.channel, sp.subject, sp.status)
		if _, err := pool.Exec(ctx, `UPDATE tickets SET created_at = $2, updated_at = $3 WHERE ticket_id = $1`, d.ID,
			time.Date(2026, 1, sp.day, 12, 0, 0, 0, time.UTC), time.Date(2026, 2, 10-sp.day, 0, 0, 0, 0, time.UTC)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.ID)
	}
	foreign := tkTicket(t, s, tenantB, ub.ID, 1, "Refund for order 1001", tickets.StatusOpen)
	// Messages: a word only in a message finds its ticket.
	tkMessage(t, pool, tenantA, ids[1], tickets.SenderEndUser, "I keep getting the error code XJ-42 when the page loads.")
	tkMessage(t, pool, tenantA, ids[2], tickets.SenderAgent, "We have refunded the shipping costs.")
	tkMessage(t, pool, tenantB, foreign.ID, tickets.SenderEndUser, "error code XJ-42 here too")
	// A topic on a message of ticket 3.
	m := tkMessage(t, pool, tenantA, ids[3], tickets.SenderEndUser, "Bitte korrigieren.")
	if _, err := pool.Exec(ctx, `INSERT INTO topic_names (customer_id, topic_id, name) VALUES ($1, 9, 'Billing');
		`, tenantA); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO message_topics (customer_id, message_id, topic_id) VALUES ($1, $2, 9)`, tenantA, m); err != nil {
		t.Fatal(err)
	}
	// Its topic comes with the ticket, in the list as in the details (a
	// listed ticket has no search configuration).
	l, err := s.ListTickets(ctx, tenantA, tickets.TicketFilter{}, paging.Page{Number: 1, Size: 100})
	if err != nil {
		t.Fatal(err)
	}
	one, err := s.TicketDetails(ctx, tenantA, ids[3])
	if err != nil || !slices.Equal(one.Topics, []string{"Billing"}) {
		t.Fatalf("details %+v %v", one, err)
	}
	one.SearchConfig = ""
	if i := slices.IndexFunc(l.Items, func(x tickets.TicketDetails) bool { return x.ID == ids[3] }); i < 0 ||
		!reflect.DeepEqual(l.Items[i], one) {
		t.Fatalf("listed %+v, want %+v", l.Items, one)
	}
	rev := func(xs ...int64) []int64 { out := slices.Clone(xs); slices.Reverse(out); return out }
	ptr := func(v int64) *int64 { return &v }
	st := func(s tickets.Status) *tickets.Status { return &s }
	yes, no := true, false
	day := func(d int) *time.Time { v := time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC); return &v }
	all := paging.Page{Number: 1, Size: 100}
	cases := []struct {
		name string
		f    tickets.TicketFilter
		want []int64
	}{
		{"everything newest first", tickets.TicketFilter{}, rev(ids...)},
		{"oldest first", tickets.TicketFilter{Sort: tickets.TicketSort{By: tickets.TicketSortCreated}}, ids},
		{"by id descending", tickets.TicketFilter{Sort: tickets.TicketSort{By: tickets.TicketSortID, Desc: true}}, rev(ids...)},
		{"by id", tickets.TicketFilter{Sort: tickets.TicketSort{By: tickets.TicketSortID}}, ids},
		{"updated newest first", tickets.TicketFilter{Sort: tickets.TicketSort{By: tickets.TicketSortUpdated, Desc: true}}, ids},
		{"updated oldest first", tickets.TicketFilter{Sort: tickets.TicketSort{By: tickets.TicketSortUpdated}}, rev(ids...)},
		{"status", tickets.TicketFilter{Status: st(tickets.StatusPending)}, []int64{ids[1]}},
		{"closed", tickets.TicketFilter{IsClosed: &yes}, []int64{ids[2]}},
		{"not closed", tickets.TicketFilter{IsClosed: &no}, rev(ids[0], ids[1], ids[3], ids[4])},
		{"status contradicting isClosed", tickets.TicketFilter{IsClosed: &yes, Status: st(tickets.StatusOpen)}, []int64{}},
		{"channel", tickets.TicketFilter{ChannelID: ptr(2)}, rev(ids[2], ids[3])},
		{"end user", tickets.TicketFilter{EndUserID: ptr(u1.ID)}, rev(ids[0], ids[1])},
		{"end user and status", tickets.TicketFilter{EndUserID: ptr(u1.ID), Status: st(tickets.StatusOpen)}, []int64{ids[0]}},
		{"topic", tickets.TicketFilter{TopicID: ptr(9)}, []int64{ids[3]}},
		{"unknown topic", tickets.TicketFilter{TopicID: ptr(10)}, []int64{}},
		{"created from", tickets.TicketFilter{CreatedFrom: day(4)}, rev(ids[3], ids[4])},
		{"created before", tickets.TicketFilter{CreatedBefore: day(3)}, rev(ids[0], ids[1])},
		{"created window", tickets.TicketFilter{CreatedFrom: day(2), CreatedBefore: day(4)}, rev(ids[1], ids[2])},
		{"search subject stemmed", tickets.TicketFilter{Q: "refunds"}, rev(ids[0], ids[2])},
		{"search message only word", tickets.TicketFilter{Q: "XJ-42"}, []int64{ids[1]}},
		{"search exact word", tickets.TicketFilter{Q: "Rechnung"}, []int64{ids[3]}},
		{"search German stemmed", tickets.TicketFilter{Q: "Rechnungen falsch"}, []int64{ids[3]}},
		{"search phrase", tickets.TicketFilter{Q: `"does not work"`}, []int64{ids[1]}},
		{"search or", tickets.TicketFilter{Q: "password or login"}, rev(ids[1], ids[4])},
		{"search minus", tickets.TicketFilter{Q: "refund -order"}, []int64{ids[2]}},
		{"search nothing", tickets.TicketFilter{Q: "zebra"}, []int64{}},
		{"search punctuation only", tickets.TicketFilter{Q: "!!! ???"}, []int64{}},
		{"search and status", tickets.TicketFilter{Q: "refund", Status: st(tickets.StatusClosed)}, []int64{ids[2]}},
		{"search, oldest first", tickets.TicketFilter{Q: "refund", Sort: tickets.TicketSort{By: tickets.TicketSortCreated}}, []int64{ids[0], ids[2]}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, total := tkList(t, s, tenantA, tc.f, all)
			if !slices.Equal(got, tc.want) || total != len(tc.want) {
				t.Fatalf("got %v (total %d), want %v", got, total, tc.want)
			}
		})
	}
	// Paging: totals stay, the last page is short, past the end is empty.
	for _, pc := range []struct {
		page      paging.Page
		want      []int64
		wantTotal int
	}{
		{paging.Page{Number: 1, Size: 2}, rev(ids...)[:2], 5},
		{paging.Page{Number: 3, Size: 2}, []int64{ids[0]}, 5},
		{paging.Page{Number: 4, Size: 2}, []int64{}, 5},
	} {
		got, total := tkList(t, s, tenantA, tickets.TicketFilter{}, pc.page)
		if !slices.Equal(got, pc.want) || total != pc.wantTotal {
			t.Fatalf("page %+v: %v %d", pc.page, got, total)
		}
	}
	if got, total := tkList(t, s, tenantB, tickets.TicketFilter{Q: "XJ-42"}, all); !slices.Equal(got, []int64{foreign.ID}) || total != 1 {
		t.Fatalf("tenant B search %v %d", got, total)
	}
	tkCounts(t, pool)
}

// Bulk updates are all or nothing: a foreign id is a 404 naming it, a
// forbidden transition a 409 naming the tickets, and nothing changes.
func TestTkBulkAllOrNothing(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	u := create(t, s, tenantA, "Ada", "")
	ub := create(t, s, tenantB, "Eve", "")
	a := tkTicket(t, s, tenantA, u.ID, 1, "one", tickets.StatusOpen)
	b := tkTicket(t, s, tenantA, u.ID, 1, "two", tickets.StatusClosed)
	c := tkTicket(t, s, tenantA, u.ID, 1, "three", tickets.StatusEscalated)
	f := tkTicket(t, s, tenantB, ub.ID, 1, "foreign", tickets.StatusOpen)
	before, _ := tkEventTypes(t, pool)
	snapshot := func() string {
		var out string
		_ = pool.QueryRow(ctx, `SELECT string_agg(ticket_id || status || coalesce(customer_rep_id, 0) || updated_at, ',' ORDER BY ticket_id) FROM tickets`).Scan(&out)
		return out
	}
	start := snapshot()
	plan := func(action tickets.BulkAction, rep *int64) func([]tickets.Ticket) ([]tickets.TicketChange, error) {
		return func(ts []tickets.Ticket) ([]tickets.TicketChange, error) { return tickets.PlanBulk(ts, action, rep) }
	}
	err := s.BulkUpdateTickets(ctx, tenantA, []int64{a.ID, c.ID, f.ID, 999999}, plan(tickets.BulkClose, nil))
	if e := wantCode(t, err, apperr.NotFound); e.Fields["ticketIDs"] != fmt.Sprintf("not found: %d, 999999", f.ID) {
		t.Fatalf("fields %v", e.Fields)
	}
	err = s.BulkUpdateTickets(ctx, tenantA, []int64{a.ID, b.ID, c.ID}, plan(tickets.BulkEscalate, nil))
	if e := wantCode(t, err, apperr.Conflict); e.Fields["ticketIDs"] != fmt.Sprintf("cannot become Escalated: %d", b.ID) {
		t.Fatalf("fields %v", e.Fields)
	}
	if snapshot() != start {
		t.Fatal("a failed bulk update changed tickets")
	}
	if after, _ := tkEventTypes(t, pool); len(after) != len(before) {
		t.Fatalf("a failed bulk update wrote events: %v", after)
	}
	// close: two change, the Closed one is left alone (no event).
	if err := s.BulkUpdateTickets(ctx, tenantA, []int64{a.ID, b.ID, c.ID}, plan(tickets.BulkClose, nil)); err != nil {
		t.Fatal(err)
	}
	types, data := tkEventTypes(t, pool)
	types, data = types[len(before):], data[len(before):]
	if len(types) != 2 || data[0].TicketID != a.ID || data[0].PreviousStatus != "Open" || data[1].TicketID != c.ID ||
		data[1].PreviousStatus != "Escalated" || !data[1].IsClosed {
		t.Fatalf("events %v %+v", types, data)
	}
	rep := int64(5)
	if err := s.BulkUpdateTickets(ctx, tenantA, []int64{a.ID, b.ID}, plan(tickets.BulkAssign, &rep)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{a.ID, b.ID} {
		d, _ := s.TicketDetails(ctx, tenantA, id)
		if d.CustomerRepID == nil || *d.CustomerRepID != 5 || d.Status != tickets.StatusClosed {
			t.Fatalf("assigned %+v", d)
		}
	}
	tkCounts(t, pool)
}

// Concurrent bulk updates over overlapping ids, in opposite directions,
// all finish (the rows are locked in id order; the counters are written in
// (customer, status) order), and the counters stay exact.
func TestTkBulkParallelNoDeadlock(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	u := create(t, s, tenantA, "Ada", "")
	var ids []int64
	for i := range 40 {
		ids = append(ids, tkTicket(t, s, tenantA, u.ID, 1, fmt.Sprintf("t%d", i), tickets.StatusOpen).ID)
	}
	actions := []tickets.BulkAction{tickets.BulkClose, tickets.BulkReopen, tickets.BulkEscalate, tickets.BulkReopen}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range 5 {
				action := actions[(w+r)%len(actions)]
				lo := (w * 3) % 30
				sub := slices.Clone(ids[lo : lo+10])
				err := s.BulkUpdateTickets(ctx, tenantA, sub, func(ts []tickets.Ticket) ([]tickets.TicketChange, error) {
					ch, err := tickets.PlanBulk(ts, action, nil)
					if apperr.Is(err, apperr.Conflict) { // escalating a Closed ticket: fine here
						return nil, nil
					}
					return ch, err
				})
				if err != nil {
					errs <- err
				}
				// A single-ticket status change in between, as PUT does.
				_ = s.UpdateTicket(ctx, tenantA, sub[9-r], func(t tickets.Ticket) (tickets.Ticket, error) {
					if t.Status == tickets.StatusClosed {
						t.Status = tickets.StatusOpen
					} else {
						t.Status = tickets.StatusClosed
					}
					return t, nil
				})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("bulk update: %v", err)
	}
	tkCounts(t, pool)
}

// Migration 004 counts the tickets written before it; afterwards the
// triggers keep the counters, also for writes under another search_path.
func TestTkCountersMigrationBackfill(t *testing.T) {
	ctx := context.Background()
	all := postgres.Migrations()
	before := fstest.MapFS{}
	entries, err := fs.ReadDir(all, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() < "004" {
			data, _ := fs.ReadFile(all, e.Name())
			before[e.Name()] = &fstest.MapFile{Data: data}
		}
	}
	pool := pgtest.NewSchema(t, postgres.Schema, before)
	if _, err := pool.Exec(ctx, `INSERT INTO end_users (end_user_id, customer_id, name) VALUES (1, 1, 'Ada'), (2, 2, 'Eve');
		INSERT INTO tickets (customer_id, end_user_id, channel_id, subject, status, ticket_token)
		SELECT c, c, 1, 's', (ARRAY['Open','Closed','Open'])[1 + i % 3], c || '-' || i
		FROM generate_series(1, 30) i, (VALUES (1), (2)) v(c)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pgpostgres.Migrate(ctx, pool, postgres.Schema, all); err != nil {
		t.Fatal(err)
	}
	tkCounts(t, pool)
	s := postgres.New(pool, time.Now)
	if _, total := tkList(t, s, 1, tickets.TicketFilter{}, paging.Page{Number: 1, Size: 1}); total != 30 {
		t.Fatalf("total %d", total)
	}
	closed := true
	if _, total := tkList(t, s, 2, tickets.TicketFilter{IsClosed: &closed}, paging.Page{Number: 1, Size: 1}); total != 10 {
		t.Fatalf("closed %d", total)
	}
	if _, err := pool.Exec(ctx, `SET search_path TO public; UPDATE tickets.tickets SET status = 'Pending' WHERE ticket_id % 2 = 0;
		DELETE FROM tickets.tickets WHERE ticket_id % 5 = 0; RESET search_path`); err != nil {
		t.Fatal(err)
	}
	tkCounts(t, pool)
}

// A bulk update of 500 tickets: one transaction, one ticket.updated each.
func TestTkBulk500(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	u := create(t, s, tenantA, "Ada", "")
	if _, err := pool.Exec(ctx, `INSERT INTO tickets (customer_id, end_user_id, channel_id, subject, status, ticket_token)
		SELECT $1, $2, 1, 'bulk ' || i, 'Open', 'tok-' || i FROM generate_series(1, 500) i`, tenantA, u.ID); err != nil {
		t.Fatal(err)
	}
	ids, _ := tkList(t, s, tenantA, tickets.TicketFilter{}, paging.Page{Number: 1, Size: 100})
	var all []int64
	if err := pool.QueryRow(ctx, `SELECT array_agg(ticket_id ORDER BY ticket_id) FROM tickets`).Scan(&all); err != nil || len(all) != 500 || len(ids) != 100 {
		t.Fatalf("%d tickets %v", len(all), err)
	}
	start := time.Now()
	err := s.BulkUpdateTickets(ctx, tenantA, all, func(ts []tickets.Ticket) ([]tickets.TicketChange, error) {
		return tickets.PlanBulk(ts, tickets.BulkClose, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("500 tickets closed in %v", time.Since(start).Round(time.Millisecond))
	types, data := tkEventTypes(t, pool)
	if len(types) != 500 || data[499].Status != "Closed" || data[0].PreviousStatus != "Open" {
		t.Fatalf("%d events", len(types))
	}
	closed := true
	if _, total := tkList(t, s, tenantA, tickets.TicketFilter{IsClosed: &closed}, paging.Page{Number: 1, Size: 1}); total != 500 {
		t.Fatalf("closed %d", total)
	}
	tkCounts(t, pool)
}
