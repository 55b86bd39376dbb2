package postgres

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// tkPlan is the EXPLAIN ANALYZE of a statement: the plan's text and the
// server's execution time.
func tkPlan(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) (string, float64) {
	t.Helper()
	var raw []byte
	if err := pool.QueryRow(context.Background(), "EXPLAIN (ANALYZE, FORMAT JSON) "+sql, args...).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var out []struct {
		ExecutionTime float64 `json:"Execution Time"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out) != 1 {
		t.Fatalf("plan %s: %v", raw, err)
	}
	return string(raw), out[0].ExecutionTime
}

// A page of 20 out of 100,000 tickets of one customer (beside 20,000 of
// another) reads the (customer_id, created_at DESC, ticket_id DESC) index
// and its count is the counters' sum; the search uses both GIN indexes and
// counts its matches in the same statement. The
// timings are logged (go test -v -run TestTkListPlan100k).
func TestTkListPlan100k(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 tickets")
	}
	ctx := context.Background()
	pool := pgtest.NewSchema(t, Schema, Migrations())
	s := New(pool, time.Now)
	start := time.Now()
	_, err := pool.Exec(ctx, `
		INSERT INTO end_users (end_user_id, customer_id, name) VALUES (1, 1, 'Ada'), (2, 2, 'Eve');
		INSERT INTO tickets (customer_id, end_user_id, channel_id, subject, status, ticket_token, search, created_at, updated_at)
		SELECT c, c, 1 + i % 5, subj, (ARRAY['Open','Pending','Escalated','Resolved','Closed'])[1 + i % 5], md5(c || '-' || i),
			to_tsvector('english', subj) || to_tsvector('simple', subj),
			now() - i * interval '1 minute', now() - i * interval '1 minute'
		FROM (SELECT c, i, 'Order ' || i || ' ' || (ARRAY['refund wanted','delivery late','invoice wrong','cannot log in',
			'password reset','printer broken'])[1 + i % 6] || CASE WHEN i % 1000 = 0 THEN ' zanzibar' ELSE '' END AS subj
			FROM generate_series(1, 100000) i, (VALUES (1), (2)) v(c) WHERE c = 1 OR i <= 20000) x;
		INSERT INTO ticket_messages (customer_id, ticket_id, sender_type, message, search_config, search)
		SELECT customer_id, ticket_id, 'EndUser', msg, 'english', to_tsvector('english', msg) || to_tsvector('simple', msg)
		FROM (SELECT customer_id, ticket_id, 'Hello, my parcel number ' || ticket_id || ' has not arrived'
			|| CASE WHEN ticket_id % 997 = 0 THEN ' and the courier was rude' ELSE '' END AS msg FROM tickets) x;
		ANALYZE ticket_counts;`)
	if err != nil {
		t.Fatal(err)
	}
	// As autovacuum leaves them: statistics, and the GIN indexes' pending
	// lists merged (a fresh bulk load is searched through them linearly).
	for _, table := range []string{"tickets", "ticket_messages"} {
		if _, err := pool.Exec(ctx, "VACUUM ANALYZE "+table); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("120,000 tickets and messages written in %v", time.Since(start).Round(time.Millisecond))
	page := paging.Page{Number: 1, Size: 20}
	newest := tickets.TicketSort{By: tickets.TicketSortCreated, Desc: true}
	cases := []struct {
		name  string
		f     tickets.TicketFilter
		index string // in the page's plan
		total int    // -1: not checked
	}{
		{"unfiltered", tickets.TicketFilter{Sort: newest}, "tickets_created_idx", 100000},
		{"by status", tickets.TicketFilter{Sort: newest, Status: ptrStatus(tickets.StatusPending)}, "tickets_", 20000},
		// The GIN indexes are read in ticket_search_matches (its plan:
		// checked below).
		{"search rare word", tickets.TicketFilter{Sort: newest, Q: "zanzibar", SearchConfig: tickets.SearchConfig("zanzibar")},
			"ticket_search_matches", 100},
		{"search message word", tickets.TicketFilter{Sort: newest, Q: "courier rude", SearchConfig: tickets.SearchConfig("courier rude")},
			"ticket_search_matches", -1},
		// One ticket in six: counting them all is the cost.
		{"search common word", tickets.TicketFilter{Sort: newest, Q: "refunds", SearchConfig: tickets.SearchConfig("refunds")},
			"", 16666},
		// After many executions of one statement PostgreSQL may switch to
		// a generic plan; a rare word must stay fast after common ones.
		{"rare word again", tickets.TicketFilter{Sort: newest, Q: "zanzibar", SearchConfig: tickets.SearchConfig("zanzibar")},
			"ticket_search_matches", 100},
	}
	for _, tc := range cases {
		q, _ := listQueries(1, tc.f, page)
		plan, ms := tkPlan(t, pool, q.pageSQL, q.pageArgs...)
		if os.Getenv("TK_PLAN") == tc.name {
			t.Log(plan)
		}
		if !strings.Contains(plan, tc.index) { // "" when the planner may read the table instead
			t.Errorf("%s: the page does not use %s: %s", tc.name, tc.index, plan)
		}
		countPlan, countMS := "", 0.0 // a search counts in its one statement
		if !q.search() {
			countPlan, countMS = tkPlan(t, pool, q.countSQL, q.countArgs...)
		}
		if tc.f.ByStatusOnly() && !strings.Contains(countPlan, `"Relation Name": "ticket_counts"`) {
			t.Errorf("%s: the count does not read the counters: %s", tc.name, countPlan)
		}
		const rounds = 50
		began := time.Now()
		for range rounds {
			l, err := s.ListTickets(ctx, 1, tc.f, page)
			if err != nil {
				t.Fatal(err)
			}
			items, total := l.Items, l.Total
			if len(items) != 20 || (tc.total >= 0 && total != tc.total) {
				t.Fatalf("%s: %d items of %d, want 20 of %d", tc.name, len(items), total, tc.total)
			}
		}
		t.Logf("%-20s page %.2f ms, count %.2f ms (server); ListTickets %.2f ms per call", tc.name, ms, countMS,
			float64(time.Since(began).Microseconds())/1000/rounds)
	}
	// ticket_search_matches (017) runs without JIT on generic plans, and
	// its statement, so planned (without the words), reads both GIN
	// indexes.
	var body string
	var config []string
	if err := pool.QueryRow(ctx, `SELECT prosrc, proconfig FROM pg_proc WHERE proname = 'ticket_search_matches'
		AND pronamespace = current_schema()::regnamespace`).Scan(&body, &config); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(config, "jit=off") || !slices.Contains(config, "plan_cache_mode=force_generic_plan") {
		t.Errorf("ticket_search_matches settings %q, want jit=off and plan_cache_mode=force_generic_plan", config)
	}
	_, stmt, _ := strings.Cut(body, "RETURN QUERY")
	stmt, _, _ = strings.Cut(stmt, ";")
	stmt = regexp.MustCompile(`\bcustomer\b`).ReplaceAllString(stmt, "$$1")
	stmt = regexp.MustCompile(`\bquery\b`).ReplaceAllString(stmt, "$$2")
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var plan []byte
	_, err = conn.Exec(ctx, `PREPARE search_matches(bigint, tsquery) AS `+stmt)
	if err == nil {
		_, err = conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`)
	}
	if err == nil {
		err = conn.QueryRow(ctx, `EXPLAIN (FORMAT JSON) EXECUTE search_matches(1, 'courier & rude')`).Scan(&plan)
	}
	if err != nil {
		t.Fatalf("%v: %s", err, stmt)
	}
	if _, err := conn.Exec(ctx, `DEALLOCATE search_matches; RESET plan_cache_mode`); err != nil {
		t.Fatal(err)
	}
	for _, index := range []string{"tickets_search_idx", "ticket_messages_search_idx"} {
		if !strings.Contains(string(plan), `"Index Name": "`+index+`"`) {
			t.Errorf("ticket_search_matches does not use %s: %s", index, plan)
		}
	}
}

// An unfiltered list runs on its generic plan from its first execution
// on, for every page: the plan cache of the one connection that served 60
// lists (pages 1 to 30, twice, and 30 of another sort) holds one generic
// plan per sort and no custom plan; and the setting stays in the list's
// transaction (the connection's next statements plan as before).
func TestTkListGenericPlan(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewSchema(t, Schema, Migrations())
	cfg := pool.Config()
	cfg.MaxConns = 1
	one, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if _, err := one.Exec(ctx, `
		INSERT INTO end_users (end_user_id, customer_id, name) VALUES (1, 1, 'Ada');
		INSERT INTO tickets (customer_id, end_user_id, channel_id, subject, status, ticket_token, created_at, updated_at)
		SELECT 1, 1, 1, 'Order ' || i, 'Open', md5(i::text), now() - i * interval '1 minute', now() - i * interval '1 minute'
		FROM generate_series(1, 1000) i`); err != nil {
		t.Fatal(err)
	}
	s := New(one, time.Now)
	newest := tickets.TicketFilter{Sort: tickets.TicketSort{By: tickets.TicketSortCreated, Desc: true}}
	byID := tickets.TicketFilter{Sort: tickets.TicketSort{By: tickets.TicketSortID}}
	for _, f := range []tickets.TicketFilter{newest, newest, byID} {
		for n := 1; n <= 30; n++ {
			l, err := s.ListTickets(ctx, 1, f, paging.Page{Number: n, Size: 20})
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Items) != 20 || l.Total != 1000 || !l.More {
				t.Fatalf("page %d: %d items of %d, more %v", n, len(l.Items), l.Total, l.More)
			}
		}
	}
	var statements, generic, custom int64
	var mode string
	if err := one.QueryRow(ctx, `SELECT count(*), coalesce(sum(generic_plans), 0), coalesce(sum(custom_plans), 0),
		current_setting('plan_cache_mode') FROM pg_prepared_statements WHERE statement LIKE 'WITH p AS MATERIALIZED%'`).
		Scan(&statements, &generic, &custom, &mode); err != nil {
		t.Fatal(err)
	}
	if statements != 2 || generic != 90 || custom != 0 || mode != "auto" {
		t.Errorf("%d list statements, %d generic plans and %d custom ones; plan_cache_mode %s after the lists", statements, generic, custom, mode)
	}
}

func ptrStatus(s tickets.Status) *tickets.Status { return &s }
