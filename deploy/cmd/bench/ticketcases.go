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

	"supportplatform.dev/deploy/seed"
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

// seed makes benchTickets tickets of the logged-in customer (seed.SeedTickets)
// and keeps the ids of the newest messageTickets.
func (b *ticketsBench) seed(ctx context.Context, e *benchEnv) (string, error) {
	start := time.Now()
	t, err := seed.SeedTickets(ctx, e.API, e.DB, benchTickets)
	if err != nil {
		return "", err
	}
	if b.ticketIDs, err = seed.NewestTicketIDs(ctx, e.DB, t.CustomerID, messageTickets); err != nil {
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

// ticketsCustomer is the customer the tickets cases share: its tickets are
// only the seeded ones, whatever other cases add to the demo customer.
const ticketsCustomer = "Bench Tickets"

// ticketCases are the tickets cases, sharing one seeded customer.
func ticketCases() []*benchCase {
	tb := &ticketsBench{}
	perQuery := benchTickets / (len(seed.SubjectAdjectives) * len(seed.SubjectNouns))
	return []*benchCase{
		{
			Name: "tickets-list", Method: http.MethodGet, Auth: true, Needs: []string{"auth", "mailingest", "tickets"}, Customer: ticketsCustomer,
			Vary: func(n uint64) (string, string) {
				return fmt.Sprintf("/api/Tickets?pageNumber=%d&pageSize=20", n%listPages+1), ""
			},
			Check: checkTicketsPage,
			Setup: tb.setup,
			Note:  fmt.Sprintf("pages 1..%d of 20, newest first, of %d tickets of one customer", listPages, benchTickets),
		},
		{
			Name: "tickets-search", Method: http.MethodGet, Auth: true, Needs: []string{"auth", "mailingest", "tickets"}, Customer: ticketsCustomer,
			Vary: func(n uint64) (string, string) {
				return "/api/Tickets?pageSize=20&q=" + url.QueryEscape(seed.SearchQuery(n)), ""
			},
			Check:      checkTicketsPage,
			Setup:      tb.setup,
			RelativeTo: "tickets-list",
			Note: fmt.Sprintf("q = two words (\"broken invoice\", ...), each pair in %d of the %d tickets' subjects; full-text over subjects and messages",
				perQuery, benchTickets),
		},
		{
			Name: "message-create", Method: http.MethodPost, Auth: true, Expect: http.StatusCreated,
			Needs: []string{"auth", "mailingest", "tickets"}, Customer: ticketsCustomer,
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
