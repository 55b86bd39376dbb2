// Package seed fills a running stack with data in bulk for the runs that
// measure it (make bench, make console-budgets): what would take minutes
// through the API is written by SQL as the database administrator, the way
// the services themselves write it.
package seed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/deploy/loadgen"
)

// Subjects combine an adjective and a noun: a two-word query matches 1 in
// len(SubjectAdjectives)*len(SubjectNouns) tickets (100 of 100,000).
var (
	SubjectAdjectives = []string{"broken", "missing", "late", "damaged", "wrong", "duplicate", "refunded", "blocked",
		"expired", "locked", "empty", "slow", "failed", "cancelled", "unpaid", "invalid", "noisy", "frozen", "lost", "stolen"}
	SubjectNouns = []string{"invoice", "parcel", "account", "password", "subscription", "delivery", "printer", "laptop",
		"voucher", "license", "payment", "order", "router", "charger", "battery", "screen", "keyboard", "headset", "camera",
		"speaker", "ticket", "booking", "transfer", "card", "login", "upgrade", "download", "update", "warranty", "return",
		"exchange", "coupon", "gift", "shipment", "label", "address", "contract", "meter", "sensor", "cable", "adapter",
		"mouse", "monitor", "tablet", "phone", "watch", "charger2", "dock", "drive", "backup"}
)

// SearchQuery is the n-th two-word query (an adjective and a noun) that
// matches seeded subjects.
func SearchQuery(n uint64) string {
	a := SubjectAdjectives[n%uint64(len(SubjectAdjectives))]
	b := SubjectNouns[(n/uint64(len(SubjectAdjectives)))%uint64(len(SubjectNouns))]
	return a + " " + b
}

// Tickets is what SeedTickets made.
type Tickets struct {
	CustomerID int64
	EndUserID  int64
	ChannelID  int64
}

// SeedTickets makes an end user and a web channel through the API (as the
// customer api is logged in as), then n tickets of that customer in one
// INSERT as the database administrator (db), with the search vectors the
// tickets service writes, spread over the five statuses, one second apart
// (the newest now), and finally VACUUM ANALYZE so that the planner knows
// them (and ANALYZE of the whole database, as autovacuum would).
func SeedTickets(ctx context.Context, api *loadgen.Client, db *pgxpool.Pool, n int) (Tickets, error) {
	var t Tickets
	if db == nil {
		return t, errors.New("seed: no database")
	}
	var me struct {
		Customer struct {
			CustomerID int64 `json:"customerID"`
		} `json:"customer"`
	}
	data, err := api.Do(ctx, http.MethodGet, "/api/Customers/me", "", http.StatusOK)
	if err == nil {
		err = json.Unmarshal(data, &me)
	}
	if err != nil {
		return t, err
	}
	if t.CustomerID = me.Customer.CustomerID; t.CustomerID == 0 {
		return t, fmt.Errorf("seed: no customer id in /api/Customers/me: %s", data)
	}
	var user struct {
		EndUserID int64 `json:"endUserID"`
	}
	if data, err = api.Do(ctx, http.MethodPost, "/api/EndUsers", `{"name":"Bench End User","email":"bench-user@example.com"}`,
		http.StatusCreated); err == nil {
		err = json.Unmarshal(data, &user)
	}
	if err != nil {
		return t, err
	}
	t.EndUserID = user.EndUserID
	var channel struct {
		ChannelID int64 `json:"channelID"`
	}
	if data, err = api.Do(ctx, http.MethodPost, "/api/Channels", `{"name":"Bench web","kind":"web"}`, http.StatusCreated); err == nil {
		err = json.Unmarshal(data, &channel)
	}
	if err != nil {
		return t, err
	}
	t.ChannelID = channel.ChannelID
	if _, err := db.Exec(ctx, `INSERT INTO tickets.tickets AS t (customer_id, channel_id, end_user_id, subject, status,
		ticket_token, search, search_config, created_at, updated_at)
		SELECT $1, $2, $3, s.subject, (ARRAY['Open','Pending','Escalated','Resolved','Closed'])[1 + i % 5],
			md5(random()::text || i), to_tsvector('english', s.subject) || to_tsvector('simple', s.subject), 'english', s.at, s.at
		FROM generate_series(1, $4::int) AS i,
		LATERAL (SELECT format('Order %s: %s %s', 100000 + i, ($5::text[])[1 + i % cardinality($5::text[])],
				($6::text[])[1 + (i / cardinality($5::text[])) % cardinality($6::text[])]) AS subject,
			now() - make_interval(secs => ($4 - i)::float8) AS at) AS s`,
		t.CustomerID, t.ChannelID, t.EndUserID, n, SubjectAdjectives, SubjectNouns); err != nil {
		return t, fmt.Errorf("seed tickets: %w", err)
	}
	if _, err := db.Exec(ctx, `VACUUM ANALYZE tickets.tickets`); err != nil {
		return t, err
	}
	// And statistics of every other table, as autovacuum keeps them (it is
	// off on the machine the benchmarks run on): the messages that earlier
	// cases wrote (500 in make bench) had none, and the list's generic plan
	// read them all by a sequential scan, an ANY of the page's 20 ids per
	// row, for the page's topics: 0.6 of the statement's 2.4 ms (EXPLAIN
	// ANALYZE), PostgreSQL 436 µs per list request in a full run against 205
	// with tickets-list alone; analyzed, the index on ticket_id is used.
	if _, err := db.Exec(ctx, `ANALYZE`); err != nil {
		return t, err
	}
	return t, nil
}

// NewestTicketIDs are the ids of the customer's newest limit tickets,
// newest first.
func NewestTicketIDs(ctx context.Context, db *pgxpool.Pool, customerID int64, limit int) ([]int64, error) {
	rows, err := db.Query(ctx, `SELECT ticket_id FROM tickets.tickets WHERE customer_id = $1 ORDER BY ticket_id DESC LIMIT $2`,
		customerID, limit)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
