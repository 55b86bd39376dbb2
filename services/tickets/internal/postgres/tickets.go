package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/outbox"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// ticketScalarCols are a ticket's own columns (alias t), named for
// ticketRow.
const ticketScalarCols = `t.ticket_id, t.customer_id, t.channel_id, t.end_user_id, t.customer_rep_id, t.subject, t.status,
	t.custom_fields, t.ticket_token, t.search_config::text AS search_config, t.created_at, t.updated_at`

// ticketCols select a ticket aliased t, with the sorted names of the topics
// on its messages.
const ticketCols = ticketScalarCols + `,
	coalesce((SELECT array_agg(DISTINCT n.name ORDER BY n.name) FROM ticket_messages m
		JOIN message_topics mt ON mt.message_id = m.message_id
		JOIN topic_names n ON n.customer_id = mt.customer_id AND n.topic_id = mt.topic_id
		WHERE m.ticket_id = t.ticket_id), '{}') AS topics`

// ticketWriteCols select a ticket for a write, which never reads its topic
// names (Topics is empty): a new ticket, or one locked for a change. The
// names' three-table join stays off the write path.
const ticketWriteCols = ticketScalarCols + `, '{}'::text[] AS topics`

// ticketRow is a row of ticketCols.
type ticketRow struct {
	ID            int64     `db:"ticket_id"`
	CustomerID    int64     `db:"customer_id"`
	ChannelID     int64     `db:"channel_id"`
	EndUserID     int64     `db:"end_user_id"`
	CustomerRepID *int64    `db:"customer_rep_id"`
	Subject       string    `db:"subject"`
	Status        string    `db:"status"`
	CustomFields  []byte    `db:"custom_fields"`
	Token         string    `db:"ticket_token"`
	SearchConfig  string    `db:"search_config"`
	CreatedAt     time.Time `db:"created_at"`
	UpdatedAt     time.Time `db:"updated_at"`
	Topics        []string  `db:"topics"`
}

func (r ticketRow) ticket() tickets.Ticket {
	return tickets.Ticket{ID: r.ID, CustomerID: r.CustomerID, ChannelID: r.ChannelID, EndUserID: r.EndUserID,
		CustomerRepID: r.CustomerRepID, Subject: r.Subject, Status: tickets.Status(r.Status), Topics: r.Topics,
		CustomFields: r.CustomFields, Token: r.Token, SearchConfig: r.SearchConfig, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// collectTicket reads the one ticket a query of ticketCols (or
// ticketWriteCols) returns.
func collectTicket(rows pgx.Rows, err error) (tickets.Ticket, error) {
	r, err := collectOne[ticketRow](rows, err)
	return r.ticket(), err
}

// feedbackCol selects the escalation comments of the ticket aliased t, as a
// JSON array, oldest first.
const feedbackCol = `coalesce((SELECT jsonb_agg(jsonb_build_object('messageID', f.message_id, 'comment', f.comment,
		'email', f.email, 'dateCreated', f.created_at) ORDER BY f.created_at, f.comment_id)
	FROM feedback_comments f WHERE f.ticket_id = t.ticket_id AND f.customer_id = t.customer_id), '[]') AS feedback_comments`

type feedbackRow struct {
	MessageID   int64     `json:"messageID"`
	Comment     string    `json:"comment"`
	Email       string    `json:"email"`
	DateCreated time.Time `json:"dateCreated"`
}

// ticketDetailsRow is a row of ticketCols followed by feedbackCol.
type ticketDetailsRow struct {
	ticketRow
	FeedbackComments []feedbackRow `db:"feedback_comments"`
}

func (r ticketDetailsRow) details() tickets.TicketDetails {
	d := tickets.TicketDetails{Ticket: r.ticket(), FeedbackComments: []tickets.FeedbackComment{}}
	for _, f := range r.FeedbackComments {
		d.FeedbackComments = append(d.FeedbackComments, tickets.FeedbackComment{MessageID: f.MessageID, Comment: f.Comment,
			Email: f.Email, CreatedAt: f.DateCreated})
	}
	return d
}

// ticketOrder is the whitelist of ORDER BY clauses: each is served by an
// index on (customer_id, key DESC, ticket_id DESC) or the primary key. k is
// the alias the sort key is read from: t, or a for a dateUpdated list
// walking ticket_activity (listQueries).
func ticketOrder(s tickets.TicketSort, k string) string {
	dir := " ASC"
	if s.Desc {
		dir = " DESC"
	}
	switch s.By {
	case tickets.TicketSortUpdated:
		return k + ".updated_at" + dir + ", " + k + ".ticket_id" + dir
	case tickets.TicketSortID:
		return k + ".ticket_id" + dir
	default:
		return k + ".created_at" + dir + ", " + k + ".ticket_id" + dir
	}
}

// ticketAfter is the keyset condition of the tickets after a cursor in the
// sort's order ($a the cursor's time, $i its id): a row comparison the
// sort's index (customer_id, key, ticket_id) serves as a range. k is as
// for ticketOrder.
func ticketAfter(s tickets.TicketSort, a, i, k string) string {
	cmp := " > "
	if s.Desc {
		cmp = " < "
	}
	switch s.By {
	case tickets.TicketSortUpdated:
		return "(" + k + ".updated_at, " + k + ".ticket_id)" + cmp + "(" + a + ", " + i + ")"
	case tickets.TicketSortID:
		return k + ".ticket_id" + cmp + i
	default:
		return "(" + k + ".created_at, " + k + ".ticket_id)" + cmp + "(" + a + ", " + i + ")"
	}
}

// ticketWhere builds the WHERE clause of a list; $1 is the customer.
type ticketWhere struct {
	conds []string
	args  []any
}

func (w *ticketWhere) add(cond string, v any) {
	w.args = append(w.args, v)
	w.conds = append(w.conds, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(w.args))))
}

func (w *ticketWhere) sql() string { return " WHERE " + strings.Join(w.conds, " AND ") }

func statusNames(ss []tickets.Status) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

// listQuery is a list's statements: the count and the page's ids (then
// pageDetailsSQL reads the page's tickets by id). A search is one statement
// (pageSQL, countSQL empty) that finds the matches once and returns their
// count and the page's ids. Another list runs sql: its count and its
// page's ids as one row of one statement (countSQL and pageSQL are its
// parts, for the plan tests).
type listQuery struct {
	countSQL, pageSQL   string
	countArgs, pageArgs []any
	sql                 string
	args                []any
	// details: sql also returns the page's tickets (pageWithDetails).
	details bool
}

// search tells whether pageSQL is a search's one statement.
func (q listQuery) search() bool { return q.countSQL == "" }

// shiftParams renumbers the parameters $2 and up of sql, a statement built
// here (no literal holds a $), by n: $1, the customer, stays.
func shiftParams(sql string, n int) string {
	var b strings.Builder
	for i := 0; i < len(sql); i++ {
		if sql[i] != '$' {
			b.WriteByte(sql[i])
			continue
		}
		j := i + 1
		for j < len(sql) && sql[j] >= '0' && sql[j] <= '9' {
			j++
		}
		k, _ := strconv.Atoi(sql[i+1 : j])
		if k > 1 {
			k += n
		}
		b.WriteString("$" + strconv.Itoa(k))
		i = j - 1
	}
	return b.String()
}

// listQueries builds the statements of a list; ok is false when the filter
// admits no status at all (status=Open&isClosed=true).
func listQueries(customerID int64, f tickets.TicketFilter, p paging.Page) (q listQuery, ok bool) {
	statuses := f.Statuses()
	if len(statuses) == 0 {
		return q, false
	}
	w := &ticketWhere{conds: []string{"t.customer_id = $1"}, args: []any{customerID}}
	switch {
	case len(statuses) == 1:
		w.add("t.status = ?", string(statuses[0]))
	case len(statuses) < len(tickets.Statuses):
		w.add("t.status = ANY(?)", statusNames(statuses))
	}
	if f.ChannelID != nil {
		w.add("t.channel_id = ?", *f.ChannelID)
	}
	if f.EndUserID != nil {
		w.add("t.end_user_id = ?", *f.EndUserID)
	}
	if f.CustomerRepID != nil {
		w.add("t.customer_rep_id = ?", *f.CustomerRepID)
	}
	if f.TopicID != nil {
		// The topic's tickets first (an array, from message_topics_topic_idx
		// and the messages' keys), then those tickets by key: as a join,
		// the planner may walk the sort's index through every ticket of
		// the customer probing each one's messages for the topic.
		w.add(`t.ticket_id = ANY(ARRAY(SELECT m.ticket_id FROM message_topics mt JOIN ticket_messages m ON m.message_id = mt.message_id
			WHERE mt.customer_id = $1 AND mt.topic_id = ?))`, *f.TopicID)
	}
	if f.CreatedFrom != nil {
		w.add("t.created_at >= ?", *f.CreatedFrom)
	}
	if f.CreatedBefore != nil {
		w.add("t.created_at < ?", *f.CreatedBefore)
	}
	base := w.sql()
	// The page's ids first (narrow rows, from the index alone when not
	// searching), then their columns.
	from := `tickets t` + base
	keys := "t"
	count := `SELECT count(*) FROM ` + from
	switch {
	case f.Sort.By == tickets.TicketSortUpdated && f.Q == "" && len(w.conds) == 1:
		// dateUpdated without a filter: the ids from ticket_activity's
		// index alone (as t, its columns have the tickets' names). Joined
		// with the tickets, each row an OFFSET skips was read from the
		// table too: page 50 took 7.6 ms at 10,000 tickets and 20.6 ms at
		// 1,000,000 (make bench-scale).
		from = `ticket_activity t WHERE t.customer_id = $1`
	case f.Sort.By == tickets.TicketSortUpdated && f.Q == "":
		// dateUpdated is ordered by ticket_activity's index (migration
		// 016: no ticket index holds updated_at, so a message's update of
		// its ticket is HOT); each ticket is read by its key for the
		// filters. The count needs no activity rows.
		from = `tickets t JOIN ticket_activity a ON a.ticket_id = t.ticket_id` + base + ` AND a.customer_id = $1`
		keys = "a"
	}
	order := ticketOrder(f.Sort, keys)
	if f.Q != "" {
		cfg := f.SearchConfig
		if cfg == "" {
			cfg = "simple"
		}
		w.args = append(w.args, f.Q, cfg)
		qp, cp := "$"+strconv.Itoa(len(w.args)-1), "$"+strconv.Itoa(len(w.args))
		// The customer's matches (function ticket_search_matches,
		// migration 017: its statements keep one generic plan per
		// connection, without JIT), then the filters on their columns
		// (as t, they have the tickets' names). The sort keys come with
		// the matches, so a query that matches many tickets is a top-N
		// sort of its matches, not a join with every ticket of the
		// customer.
		from = `(SELECT t.ticket_id, t.created_at, t.updated_at FROM ticket_search_matches($1, ` + qp + `, ` + cp + `) t`
		if len(w.conds) > 1 {
			from += ` WHERE ` + strings.Join(w.conds[1:], " AND ")
		}
		from += `)`
	}
	countsPage := false // the count's parameters are the page's first ones
	// The counters' sums as bigint: sum(bigint) is a numeric, which pgx
	// decoded into an int64 through math/big (3% of the service's CPU per
	// list, make bench tickets-list).
	switch {
	case f.Q != "":
		// The matches once, for the count and the page (below).
	case f.ByStatusOnly() && len(statuses) == len(tickets.Statuses):
		// Every status: all the customer's counters.
		q.countSQL = `SELECT coalesce(sum(n), 0)::bigint FROM ticket_counts WHERE customer_id = $1`
		q.countArgs = []any{customerID}
	case f.ByStatusOnly():
		q.countSQL = `SELECT coalesce(sum(n), 0)::bigint FROM ticket_counts WHERE customer_id = $1 AND status = ANY($2)`
		q.countArgs = []any{customerID, statusNames(statuses)}
	case f.EndUserID == nil && f.TopicID == nil && f.CreatedFrom == nil && f.CreatedBefore == nil &&
		(f.ChannelID == nil) != (f.CustomerRepID == nil):
		// One channel or one rep, in any statuses: their counters (015).
		kind, value := "channel", f.ChannelID
		if f.CustomerRepID != nil {
			kind, value = "rep", f.CustomerRepID
		}
		q.countSQL = `SELECT coalesce(sum(n), 0)::bigint FROM ticket_filter_counts
			WHERE customer_id = $1 AND kind = $2 AND value = $3 AND status = ANY($4)`
		q.countArgs = []any{customerID, kind, *value, statusNames(statuses)}
	default:
		q.countSQL, q.countArgs = count, w.args
		countsPage = true
	}
	pageArgs := slices.Clip(w.args)
	page := from
	if f.After != nil {
		// The cursor's position, after the count's arguments: the count
		// is the whole list's.
		pageArgs = append(pageArgs, f.After.ID)
		id, at := "$"+strconv.Itoa(len(pageArgs)), ""
		if f.Sort.By != tickets.TicketSortID { // the id alone orders that list
			pageArgs = append(pageArgs, f.After.At)
			at = "$" + strconv.Itoa(len(pageArgs))
		}
		after := ticketAfter(f.Sort, at, id, keys)
		if f.Q != "" {
			page = `h t WHERE ` + after
		} else {
			page += ` AND ` + after
		}
	} else if f.Q != "" {
		page = `h t`
	}
	n := len(pageArgs)
	if f.Q != "" {
		// One more than the page: whether tickets follow it.
		q.pageSQL = `SELECT t.ticket_id FROM ` + page + ` ORDER BY ` + order +
			` LIMIT $` + strconv.Itoa(n+1) + ` OFFSET $` + strconv.Itoa(n+2)
		q.pageSQL = `WITH h AS MATERIALIZED ` + from + `
			SELECT (SELECT count(*) FROM h) AS total, ARRAY(` + q.pageSQL + `) AS ids`
		q.pageArgs = append(pageArgs, p.Size+1, p.Offset())
		return q, true
	}
	// One more than the page: whether tickets follow it.
	q.pageSQL = `SELECT t.ticket_id FROM ` + page + ` ORDER BY ` + order +
		` LIMIT $` + strconv.Itoa(n+1) + ` OFFSET $` + strconv.Itoa(n+2)
	q.pageArgs = append(pageArgs, p.Size+1, p.Offset())
	// The count and the ids in one statement, one row: one statement's
	// round trip and execution instead of a batch of two. The count's
	// parameters after the page's: the default count's are the page's
	// first ones, the counters' own follow (the customer is $1 in both).
	count, args := q.countSQL, slices.Clip(q.pageArgs)
	if !countsPage {
		count = shiftParams(q.countSQL, len(args)-1)
		args = append(args, q.countArgs[1:]...)
	}
	q.sql = `SELECT (` + count + `) AS total, ARRAY(` + q.pageSQL + `) AS ids`
	q.args = args
	if len(w.conds) == 1 {
		// No filter: the sort's index within the customer is the plan
		// for any page (listTickets runs it on its generic plan). With a
		// status, the generic plan of dateUpdated (ticket_activity's index,
		// each ticket's status by key) read 13,700 rows for page 50 of 20
		// in a parallel plan (TestTkListPlanBounded100k): planned for the
		// status and the OFFSET each time, as other filters are.
		q.sql, q.details = pageWithDetails(q.sql, p.Size), true
	}
	return q, true
}

// pageWithDetails is head (a statement of one row: total and ids, one more
// than size) followed by the tickets of the first size ids as
// pageDetailsSQL reads them: a row of total and ids (every other column
// null), then a row per ticket (total and ids null), in no order. One
// round trip and one statement where the ids then their details took two
// (listTickets runs it on its generic plan).
func pageWithDetails(head string, size int) string {
	return `WITH p AS MATERIALIZED (` + head + `)
	SELECT p.total, p.ids, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint, NULL::text, NULL::text,
		NULL::jsonb, NULL::text, NULL::timestamptz, NULL::timestamptz, NULL::text[], NULL::jsonb FROM p
	UNION ALL
	SELECT NULL, NULL, d.* FROM p, LATERAL (` + pageDetails("p.ids[1:"+strconv.Itoa(size)+"]") + `) d`
}

// ListTickets pages through the customer's tickets (their SearchConfig
// empty: listScalarCols), from p's offset or
// after f.After (keyset paging). The count of a list filtered by status or
// isClosed alone (or not at all) is the sum of the per-status counters
// (table ticket_counts, kept by triggers), by one channel or one rep (and
// status) of theirs (ticket_filter_counts); a search counts its matches in
// the statement that finds them; other lists are counted. Count and page
// go to the server in one round trip.
func (s *Store) ListTickets(ctx context.Context, customerID int64, f tickets.TicketFilter, p paging.Page) (tickets.TicketList, error) {
	items, total, more, err := s.listTickets(ctx, customerID, f, p)
	return tickets.TicketList{Items: items, Total: total, More: more}, err
}

func (s *Store) listTickets(ctx context.Context, customerID int64, f tickets.TicketFilter, p paging.Page) ([]tickets.TicketDetails, int, bool, error) {
	q, ok := listQueries(customerID, f, p)
	if !ok {
		return nil, 0, false, nil
	}
	var total int64
	var ids []int64
	var found []tickets.TicketDetails
	if q.search() {
		// A prepared statement like the others (its results in binary).
		// Its generic plan cannot go wrong for some words: it reads the
		// matches of ticket_search_matches, whose statements plan the GIN
		// scans. When the matches were inline, PostgreSQL's generic plan
		// walked the customer's tickets newest first testing each against
		// the query (a word in 0.1% of 100,000 tickets took 28 ms instead
		// of 2, make bench-scale), so each search was planned for its
		// words: 0.29 of the statement's 0.75 ms (EXPLAIN SUMMARY).
		err := s.db.QueryRow(ctx, q.pageSQL, q.pageArgs...).Scan(&total, &ids)
		if err != nil {
			return nil, 0, false, postgres.Error(err, "ticket")
		}
	} else if q.details {
		// On its generic plan from the first execution on: PostgreSQL
		// planned a prepared statement for its parameters five times per
		// connection, then kept planning it as long as the generic plan's
		// estimate (a LIMIT parameter is taken as a tenth of the rows)
		// exceeded the custom plans'. Planning this statement takes 0.6 to
		// 1.9 ms, running it 0.15. The plan is the same for every page:
		// the index of the sort within the customer, then the page's
		// tickets by key (TestTkListPlanBounded100k). The setting is local
		// to the batch's transaction: its statements run in one implicit
		// transaction, up to the batch's one Sync (set_config's is_local;
		// SET LOCAL would warn outside BEGIN, and BEGIN and COMMIT cost two
		// statements more).
		b := &pgx.Batch{}
		b.Queue("SELECT set_config('plan_cache_mode', 'force_generic_plan', true)")
		b.Queue(q.sql, q.args...).Query(func(rows pgx.Rows) error {
			var err error
			found, err = collectPage(rows, p.Size, &total, &ids)
			return err
		})
		if err := s.db.SendBatch(ctx, b).Close(); err != nil {
			return nil, 0, false, postgres.Error(err, "ticket")
		}
	} else if err := s.db.QueryRow(ctx, q.sql, q.args...).Scan(&total, &ids); err != nil {
		return nil, 0, false, postgres.Error(err, "ticket")
	}
	more := len(ids) > p.Size
	if more {
		ids = ids[:p.Size]
	}
	if len(ids) == 0 {
		return nil, int(total), false, nil
	}
	if !q.details {
		// The page's tickets by id: one statement text whatever the
		// filter, so PostgreSQL keeps one generic plan for it, while the id
		// query gets a plan for its own parameters. Planning the two in one
		// statement cost more than running them.
		rows, err := s.db.Query(ctx, pageDetailsSQL, customerID, ids)
		if err == nil {
			found, err = pgx.CollectRows(rows, scanPageTicket)
		}
		if err != nil {
			return nil, 0, false, postgres.Error(err, "ticket")
		}
	}
	// In the ids' order, in place (at most 100 of each: no map to fill); a
	// ticket deleted between the two reads is left out of the page.
	n := 0
	for _, id := range ids {
		for j := n; j < len(found); j++ {
			if found[j].ID == id {
				found[n], found[j] = found[j], found[n]
				n++
				break
			}
		}
	}
	return found[:n], int(total), more, nil
}

// pageDetailsSQL reads tickets of the customer ($1) by id ($2), with the
// topic names and escalation comments of all of them gathered by one scan
// each (the page's ids at once) and joined: as ticketCols' and feedbackCol's
// subqueries, 40 per page of 20, they cost PostgreSQL 230 us per page
// against 130.
var pageDetailsSQL = pageDetails("$2")

// pageDetails is pageDetailsSQL with the ids from the expression ids.
func pageDetails(ids string) string {
	return strings.ReplaceAll(pageDetailsTemplate, "$ids", ids)
}

// listScalarCols are ticketScalarCols but the search configuration: no
// list answer shows it, and its name (regconfig's output) is a catalog
// lookup per row (a page of 20 cost PostgreSQL 10 us more and the service
// 9 us more with it).
const listScalarCols = `t.ticket_id, t.customer_id, t.channel_id, t.end_user_id, t.customer_rep_id, t.subject, t.status,
	t.custom_fields, t.ticket_token, t.created_at, t.updated_at`

const pageDetailsTemplate = `SELECT ` + listScalarCols + `, coalesce(tp.names, '{}') AS topics,
		fb.comments AS feedback_comments
	FROM tickets t
	LEFT JOIN (SELECT m.ticket_id, array_agg(DISTINCT n.name ORDER BY n.name) AS names FROM ticket_messages m
		JOIN message_topics mt ON mt.message_id = m.message_id
		JOIN topic_names n ON n.customer_id = mt.customer_id AND n.topic_id = mt.topic_id
		WHERE m.ticket_id = ANY($ids) GROUP BY m.ticket_id) tp ON tp.ticket_id = t.ticket_id
	LEFT JOIN (SELECT f.ticket_id, jsonb_agg(jsonb_build_object('messageID', f.message_id, 'comment', f.comment,
			'email', f.email, 'dateCreated', f.created_at) ORDER BY f.created_at, f.comment_id) AS comments
		FROM feedback_comments f WHERE f.customer_id = $1 AND f.ticket_id = ANY($ids) GROUP BY f.ticket_id) fb
		ON fb.ticket_id = t.ticket_id
	WHERE t.customer_id = $1 AND t.ticket_id = ANY($ids)`

// scanPageTicket reads a row of pageDetailsSQL by position (by name, pgx's
// reflection and the JSON of an empty comment list cost a fifth of the
// service's CPU per list request).
func scanPageTicket(row pgx.CollectableRow) (tickets.TicketDetails, error) {
	return scanTicketDetails(row)
}

// collectPage reads the rows of a pageWithDetails statement of size: the
// total and the ids from its first column's one non-null row, the tickets
// from the others.
func collectPage(rows pgx.Rows, size int, total *int64, ids *[]int64) ([]tickets.TicketDetails, error) {
	defer rows.Close()
	out := make([]tickets.TicketDetails, 0, size)
	for rows.Next() {
		if raw := rows.RawValues(); raw[0] != nil {
			// Decoded apart: a Scan would plan the scan of every column
			// for this row's destinations, then again for the tickets'.
			fds, m := rows.FieldDescriptions(), rows.Conn().TypeMap()
			if err := m.Scan(fds[0].DataTypeOID, fds[0].Format, raw[0], total); err != nil {
				return nil, err
			}
			if err := m.Scan(fds[1].DataTypeOID, fds[1].Format, raw[1], ids); err != nil {
				return nil, err
			}
			continue
		}
		d, err := scanTicketDetails(rows, nil, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// scanTicketDetails reads pageDetailsSQL's columns after the columns lead
// (nil: skipped).
func scanTicketDetails(row pgx.CollectableRow, lead ...any) (tickets.TicketDetails, error) {
	var r ticketRow
	var comments []byte
	if err := row.Scan(append(lead, &r.ID, &r.CustomerID, &r.ChannelID, &r.EndUserID, &r.CustomerRepID, &r.Subject, &r.Status,
		&r.CustomFields, &r.Token, &r.CreatedAt, &r.UpdatedAt, &r.Topics, &comments)...); err != nil {
		return tickets.TicketDetails{}, err
	}
	d := ticketDetailsRow{ticketRow: r}
	if comments != nil { // null: none
		if err := json.Unmarshal(comments, &d.FeedbackComments); err != nil {
			return tickets.TicketDetails{}, err
		}
	}
	return d.details(), nil
}

// TicketDetails returns a ticket of the customer with its feedback.
func (s *Store) TicketDetails(ctx context.Context, customerID, id int64) (tickets.TicketDetails, error) {
	r, err := collectOne[ticketDetailsRow](s.db.Query(ctx, `SELECT `+ticketCols+`, `+feedbackCol+` FROM tickets t
		WHERE t.customer_id = $1 AND t.ticket_id = $2`, customerID, id))
	return r.details(), postgres.Error(err, "ticket")
}

// CreateTicket inserts a ticket (ticket.created).
func (s *Store) CreateTicket(ctx context.Context, customerID int64, in tickets.NewTicket) (tickets.TicketDetails, error) {
	var t tickets.Ticket
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		t, err = s.insertTicket(ctx, tx, customerID, in)
		return err
	})
	return tickets.TicketDetails{Ticket: t, FeedbackComments: []tickets.FeedbackComment{}}, err
}

func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func sameRep(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// UpdateTicket locks the customer's ticket, lets change compute its new
// fields and writes them with ticket.updated (carrying previousStatus when
// the state changed). A change that changes nothing writes nothing. A new
// subject is indexed again in the configuration the change gives it
// (Ticket.SubjectConfig); the ticket's search configuration stays.
func (s *Store) UpdateTicket(ctx context.Context, customerID, id int64, change func(tickets.Ticket) (tickets.Ticket, error)) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		old, err := s.lockTicket(ctx, tx, customerID, id)
		if err != nil {
			return err
		}
		t, err := change(old)
		if err != nil {
			return err
		}
		subjectChanged := t.Subject != old.Subject
		if !subjectChanged && t.Status == old.Status && t.ChannelID == old.ChannelID &&
			sameRep(t.CustomerRepID, old.CustomerRepID) && sameJSON(t.CustomFields, old.CustomFields) {
			return nil
		}
		t.UpdatedAt = s.now()
		const set = `UPDATE tickets SET subject = $3, status = $4, channel_id = $5, customer_rep_id = $6,
			custom_fields = $7, updated_at = $8`
		args := []any{customerID, id, t.Subject, string(t.Status), t.ChannelID, t.CustomerRepID, []byte(t.CustomFields), t.UpdatedAt}
		sql := set + ` WHERE customer_id = $1 AND ticket_id = $2`
		if subjectChanged {
			if t.SubjectConfig == "" {
				return errors.New("postgres: a new subject without its search configuration")
			}
			sql = set + `, search = ` + searchVector("$9", "$3") + ` WHERE customer_id = $1 AND ticket_id = $2`
			args = append(args, t.SubjectConfig)
		}
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			return postgres.Error(err, "ticket")
		}
		prev := tickets.Status("")
		if t.Status != old.Status {
			prev = old.Status
		}
		return s.addTicketEvent(ctx, tx, contracts.EventTicketUpdated, t, prev)
	})
}

// DeleteTicket deletes the customer's ticket; its messages, their topics,
// votes, feedback and attachments go by ON DELETE CASCADE (the attachments'
// trigger queues their bytes in blob_garbage). It writes ticket.deleted with
// the ticket as it was.
func (s *Store) DeleteTicket(ctx context.Context, customerID, id int64) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		t, err := s.lockTicket(ctx, tx, customerID, id)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM tickets WHERE customer_id = $1 AND ticket_id = $2`, customerID, id); err != nil {
			return postgres.Error(err, "ticket")
		}
		return s.addTicketEvent(ctx, tx, contracts.EventTicketDeleted, t, "")
	})
}

// BulkUpdateTickets locks the customer's tickets ids (sorted, distinct) in
// id order, so concurrent bulk updates over overlapping ids queue instead
// of deadlocking; an id that is not the customer's is a 404 naming every
// such id. change returns the tickets that change, written by one UPDATE,
// each with its ticket.updated. Any error leaves everything as it was.
func (s *Store) BulkUpdateTickets(ctx context.Context, customerID int64, ids []int64,
	change func([]tickets.Ticket) ([]tickets.TicketChange, error)) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := collectAll[ticketRow](tx.Query(ctx, `SELECT `+ticketWriteCols+` FROM tickets t
			WHERE t.customer_id = $1 AND t.ticket_id = ANY($2) ORDER BY t.ticket_id FOR UPDATE OF t`, customerID, ids))
		if err != nil {
			return postgres.Error(err, "ticket")
		}
		locked := convert(rows, ticketRow.ticket)
		if len(locked) != len(ids) {
			found := make(map[int64]bool, len(locked))
			for _, t := range locked {
				found[t.ID] = true
			}
			var missing []string
			for _, id := range ids {
				if !found[id] {
					missing = append(missing, strconv.FormatInt(id, 10))
				}
			}
			return &apperr.Error{Code: apperr.NotFound,
				Message: strconv.Itoa(len(missing)) + " of the tickets were not found; nothing was changed",
				Fields:  map[string]string{"ticketIDs": "not found: " + strings.Join(missing, ", ")}}
		}
		changes, err := change(locked)
		if err != nil || len(changes) == 0 {
			return err
		}
		now := s.now()
		cids := make([]int64, len(changes))
		statuses := make([]string, len(changes))
		reps := make([]*int64, len(changes))
		for i, c := range changes {
			cids[i], statuses[i], reps[i] = c.Ticket.ID, string(c.Ticket.Status), c.Ticket.CustomerRepID
		}
		if _, err := tx.Exec(ctx, `UPDATE tickets t SET status = u.status, customer_rep_id = u.rep, updated_at = $2
			FROM unnest($3::bigint[], $4::text[], $5::bigint[]) AS u(id, status, rep)
			WHERE t.customer_id = $1 AND t.ticket_id = u.id`, customerID, now, cids, statuses, reps); err != nil {
			return postgres.Error(err, "ticket")
		}
		// The events' statements go to the server in one round trip.
		q := &pgx.Batch{}
		for _, c := range changes {
			t := c.Ticket
			t.UpdatedAt = now
			prev := tickets.Status("")
			if c.Previous != t.Status {
				prev = c.Previous
			}
			ev, err := s.ticketEvent(ctx, contracts.EventTicketUpdated, t, prev)
			if err != nil {
				return err
			}
			outbox.Queue(ctx, q, ev)
		}
		return postgres.Error(tx.SendBatch(ctx, q).Close(), "ticket")
	})
}

// Conversation bounds: the summary reads at most this many messages, each
// cut to this many characters.
const (
	conversationMessages = 500
	conversationChars    = 20_000
)

// Conversation returns a ticket and its messages, oldest first (the
// sender and the first 20,000 characters of the text of at most 500
// messages).
func (s *Store) Conversation(ctx context.Context, customerID, id int64) (tickets.Ticket, []tickets.Message, error) {
	t, err := collectTicket(s.db.Query(ctx, `SELECT `+ticketCols+` FROM tickets t
		WHERE t.customer_id = $1 AND t.ticket_id = $2`, customerID, id))
	if err != nil {
		return t, nil, postgres.Error(err, "ticket")
	}
	rows, err := collectAll[turnRow](s.db.Query(ctx, `SELECT message_id, sender_type, left(message, $3) AS message, created_at
		FROM ticket_messages WHERE customer_id = $1 AND ticket_id = $2 ORDER BY created_at, message_id LIMIT $4`,
		customerID, id, conversationChars, conversationMessages))
	msgs := convert(rows, func(r turnRow) tickets.Message {
		return tickets.Message{ID: r.ID, CustomerID: customerID, TicketID: id, SenderType: tickets.SenderType(r.SenderType),
			Text: r.Text, CreatedAt: r.CreatedAt}
	})
	return t, msgs, postgres.Error(err, "message")
}

// turnRow is a message of a conversation.
type turnRow struct {
	ID         int64     `db:"message_id"`
	SenderType string    `db:"sender_type"`
	Text       string    `db:"message"`
	CreatedAt  time.Time `db:"created_at"`
}
