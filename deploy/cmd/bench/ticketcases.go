package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The tickets cases: listing a page of 20 out of benchTickets tickets of one
// customer (without and with full-text search), adding a message to an
// existing ticket, and, in the same run, a raw single-row INSERT over pgx as
// the write baseline.

const (
	benchTickets = 100_000
	// messageTickets are the tickets message-create spreads its messages
	// over (each message locks its ticket's row).
	messageTickets = 1000
	// listPages are the pages tickets-list asks for in turn (deep OFFSETs
	// are a client's choice; a helpdesk UI shows the first pages).
	listPages = 50
)

// Subjects combine an adjective and a noun: a two-word query matches 1 in
// len(adjectives)*len(nouns) tickets (100 of 100,000).
var (
	subjectAdjectives = []string{"broken", "missing", "late", "damaged", "wrong", "duplicate", "refunded", "blocked",
		"expired", "locked", "empty", "slow", "failed", "cancelled", "unpaid", "invalid", "noisy", "frozen", "lost", "stolen"}
	subjectNouns = []string{"invoice", "parcel", "account", "password", "subscription", "delivery", "printer", "laptop",
		"voucher", "license", "payment", "order", "router", "charger", "battery", "screen", "keyboard", "headset", "camera",
		"speaker", "ticket", "booking", "transfer", "card", "login", "upgrade", "download", "update", "warranty", "return",
		"exchange", "coupon", "gift", "shipment", "label", "address", "contract", "meter", "sensor", "cable", "adapter",
		"mouse", "monitor", "tablet", "phone", "watch", "charger2", "dock", "drive", "backup"}
)

// ticketsBench is what the tickets cases share: the seeded customer's
// tickets, made once by the first case that needs them.
type ticketsBench struct {
	once      sync.Once
	err       error
	line      string
	ticketIDs []int64
}

func (b *ticketsBench) setup(ctx context.Context, e *benchEnv) (string, error) {
	first := false
	b.once.Do(func() { first = true; b.line, b.err = b.seed(ctx, e) })
	if first || b.err != nil {
		return b.line, b.err
	}
	return "tickets seeded before", nil
}

// seed makes an end user and a channel through the API, then benchTickets
// tickets in one INSERT as the database administrator (through the API it
// would take minutes), with the same search vectors the service writes.
func (b *ticketsBench) seed(ctx context.Context, e *benchEnv) (string, error) {
	if e.DB == nil {
		return "", errors.New("no database")
	}
	start := time.Now()
	var me struct {
		Customer struct {
			CustomerID int64 `json:"customerID"`
		} `json:"customer"`
	}
	data, err := e.API.Do(ctx, http.MethodGet, "/api/Customers/me", "", http.StatusOK)
	if err == nil {
		err = json.Unmarshal(data, &me)
	}
	if err != nil {
		return "", err
	}
	if me.Customer.CustomerID == 0 {
		return "", fmt.Errorf("no customer id in /api/Customers/me: %s", data)
	}
	var user struct {
		EndUserID int64 `json:"endUserID"`
	}
	if data, err = e.API.Do(ctx, http.MethodPost, "/api/EndUsers", `{"name":"Bench End User","email":"bench-user@example.com"}`,
		http.StatusCreated); err == nil {
		err = json.Unmarshal(data, &user)
	}
	if err != nil {
		return "", err
	}
	var channel struct {
		ChannelID int64 `json:"channelID"`
	}
	if data, err = e.API.Do(ctx, http.MethodPost, "/api/Channels", `{"name":"Bench web","kind":"web"}`, http.StatusCreated); err == nil {
		err = json.Unmarshal(data, &channel)
	}
	if err != nil {
		return "", err
	}
	if _, err := e.DB.Exec(ctx, `INSERT INTO tickets.tickets AS t (customer_id, channel_id, end_user_id, subject, status,
		ticket_token, search, search_config, created_at, updated_at)
		SELECT $1, $2, $3, s.subject, (ARRAY['Open','Pending','Escalated','Resolved','Closed'])[1 + i % 5],
			md5(random()::text || i), to_tsvector('english', s.subject) || to_tsvector('simple', s.subject), 'english', s.at, s.at
		FROM generate_series(1, $4::int) AS i,
		LATERAL (SELECT format('Order %s: %s %s', 100000 + i, ($5::text[])[1 + i % cardinality($5::text[])],
				($6::text[])[1 + (i / cardinality($5::text[])) % cardinality($6::text[])]) AS subject,
			now() - make_interval(secs => ($4 - i)::float8) AS at) AS s`,
		me.Customer.CustomerID, channel.ChannelID, user.EndUserID, benchTickets, subjectAdjectives, subjectNouns); err != nil {
		return "", fmt.Errorf("seed tickets: %w", err)
	}
	rows, err := e.DB.Query(ctx, `SELECT ticket_id FROM tickets.tickets WHERE customer_id = $1 ORDER BY ticket_id DESC LIMIT $2`,
		me.Customer.CustomerID, messageTickets)
	if err != nil {
		return "", err
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return "", err
		}
		b.ticketIDs = append(b.ticketIDs, id)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	if _, err := e.DB.Exec(ctx, `VACUUM ANALYZE tickets.tickets`); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d tickets of one customer inserted by SQL in %s", benchTickets, time.Since(start).Round(time.Millisecond)), nil
}

// checkTicketsPage wants a page of at most 20 tickets, exactly 20 and the
// whole total without a query.
func checkTicketsPage(req *http.Request, _, body []byte) error {
	var page struct {
		Items []struct {
			TicketID int64  `json:"ticketID"`
			Subject  string `json:"subject"`
		} `json:"items"`
		TotalCount int `json:"totalCount"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return err
	}
	q := req.URL.Query().Get("q")
	switch {
	case q == "" && (len(page.Items) != 20 || page.TotalCount != benchTickets):
		return fmt.Errorf("%d items of %d, want 20 of %d", len(page.Items), page.TotalCount, benchTickets)
	case q != "" && (len(page.Items) == 0 || len(page.Items) > 20 || page.TotalCount < len(page.Items)):
		return fmt.Errorf("q=%s: %d items of %d", q, len(page.Items), page.TotalCount)
	}
	return nil
}

// searchQuery is the n-th two-word query (an adjective and a noun).
func searchQuery(n uint64) string {
	a := subjectAdjectives[n%uint64(len(subjectAdjectives))]
	b := subjectNouns[(n/uint64(len(subjectAdjectives)))%uint64(len(subjectNouns))]
	return a + " " + b
}

// ticketCases are the tickets cases, sharing one seeded customer.
func ticketCases() []*benchCase {
	tb := &ticketsBench{}
	perQuery := benchTickets / (len(subjectAdjectives) * len(subjectNouns))
	return []*benchCase{
		{
			Name: "tickets-list", Method: http.MethodGet, Auth: true, Needs: []string{"auth", "mailingest", "tickets"},
			Vary: func(n uint64) (string, string) {
				return fmt.Sprintf("/api/Tickets?pageNumber=%d&pageSize=20", n%listPages+1), ""
			},
			Check: checkTicketsPage,
			Setup: tb.setup,
			Note:  fmt.Sprintf("pages 1..%d of 20, newest first, of %d tickets of one customer", listPages, benchTickets),
		},
		{
			Name: "tickets-search", Method: http.MethodGet, Auth: true, Needs: []string{"auth", "mailingest", "tickets"},
			Vary: func(n uint64) (string, string) {
				return "/api/Tickets?pageSize=20&q=" + url.QueryEscape(searchQuery(n)), ""
			},
			Check:      checkTicketsPage,
			Setup:      tb.setup,
			RelativeTo: "tickets-list",
			Note: fmt.Sprintf("q = two words (\"broken invoice\", ...), each pair in %d of the %d tickets' subjects; full-text over subjects and messages",
				perQuery, benchTickets),
		},
		{
			Name: "message-create", Method: http.MethodPost, Auth: true, Expect: http.StatusCreated,
			Needs: []string{"auth", "mailingest", "tickets"},
			Vary: func(n uint64) (string, string) {
				id := tb.ticketIDs[n%uint64(len(tb.ticketIDs))]
				return "/api/TicketMessages", `{"ticketID":` + strconv.FormatInt(id, 10) +
					`,"senderType":"Agent","message":"Thanks for your patience, the replacement ` + strconv.FormatUint(n, 10) +
					` left our warehouse today and should arrive within two days."}`
			},
			Setup:      tb.setup,
			RelativeTo: "raw-insert",
			Note:       fmt.Sprintf("an agent message into one of %d existing tickets in turn: row lock, INSERT, search vector, outbox event", messageTickets),
		},
		{
			Name: "raw-insert", Needs: []string{"tickets"},
			Direct: rawInsert,
			Setup:  createRawTable,
			Note:   "the write baseline: one single-row INSERT of a message-sized row per call over pgx (no HTTP), autocommit",
		},
	}
}

// createRawTable makes the raw-insert case's table in a schema of its own.
func createRawTable(ctx context.Context, e *benchEnv) (string, error) {
	if e.DB == nil {
		return "", errors.New("no database")
	}
	_, err := e.DB.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS bench_raw;
		CREATE TABLE IF NOT EXISTS bench_raw.messages (id bigserial PRIMARY KEY, customer_id bigint NOT NULL,
			ticket_id bigint NOT NULL, message text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`)
	return "table bench_raw.messages", err
}

// rawInsert inserts one row.
func rawInsert(ctx context.Context, e *benchEnv) error {
	_, err := e.DB.Exec(ctx, `INSERT INTO bench_raw.messages (customer_id, ticket_id, message) VALUES ($1, $2, $3)`,
		1, 1, "Thanks for your patience, the replacement left our warehouse today and should arrive within two days.")
	return err
}

// openBenchDB connects as the stack's database administrator, with a
// connection per worker.
func openBenchDB(ctx context.Context, url string, workers int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(workers) + 2
	return pgxpool.NewWithConfig(ctx, cfg)
}
