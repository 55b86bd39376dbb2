package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/services/tickets/internal/postgres"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// Keyset paging walks every list, in every sort, through the same tickets
// in the same order as one big page, ties on the sort key included (tickets
// created in the same microsecond), and tells on each page whether tickets
// follow.
func TestTkKeysetPaging(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	u := create(t, s, tenantA, "Ada", "")
	ub := create(t, s, tenantB, "Eve", "")
	statuses := []tickets.Status{tickets.StatusOpen, tickets.StatusPending, tickets.StatusClosed}
	for i := range 11 {
		d := tkTicket(t, s, tenantA, u.ID, int64(1+i%2), "Refund request", statuses[i%3])
		// Days repeat: three tickets share each created_at, updated_at
		// runs the other way with its own ties.
		if _, err := pool.Exec(ctx, `UPDATE tickets SET created_at = $2, updated_at = $3 WHERE ticket_id = $1`, d.ID,
			time.Date(2026, 1, 1+i/3, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 10-i/2, 0, 0, 0, 123456000, time.UTC)); err != nil {
			t.Fatal(err)
		}
		tkTicket(t, s, tenantB, ub.ID, 1, "Refund request", tickets.StatusOpen)
	}
	ch := int64(2)
	open := tickets.StatusOpen
	filters := map[string]tickets.TicketFilter{
		"all":     {},
		"channel": {ChannelID: &ch},
		"status":  {Status: &open},
		"search":  {Q: "refund"},
	}
	sorts := []tickets.TicketSort{}
	for _, by := range []string{tickets.TicketSortCreated, tickets.TicketSortUpdated, tickets.TicketSortID} {
		sorts = append(sorts, tickets.TicketSort{By: by}, tickets.TicketSort{By: by, Desc: true})
	}
	for name, f := range filters {
		for _, sort := range sorts {
			f.Sort, f.After = sort, nil
			if f.Q != "" {
				f.SearchConfig = tickets.SearchConfig(f.Q)
			}
			want, total := tkList(t, s, tenantA, f, paging.Page{Number: 1, Size: 100})
			if len(want) < 4 {
				t.Fatalf("%s: only %d tickets", name, len(want))
			}
			var got []int64
			for range 20 {
				l, err := s.ListTickets(ctx, tenantA, f, paging.Page{Number: 1, Size: 2})
				if err != nil {
					t.Fatal(err)
				}
				if l.Total != total {
					t.Fatalf("%s %+v: total %d after a cursor, want %d", name, sort, l.Total, total)
				}
				for _, it := range l.Items {
					got = append(got, it.ID)
				}
				if l.More != (len(got) < len(want)) {
					t.Fatalf("%s %+v: more = %v after %d of %d", name, sort, l.More, len(got), len(want))
				}
				if !l.More {
					break
				}
				last := l.Items[len(l.Items)-1]
				at := last.CreatedAt
				if sort.By == tickets.TicketSortUpdated {
					at = last.UpdatedAt
				}
				f.After = &tickets.TicketCursor{At: at, ID: last.ID}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s %+v: keyset pages %v, one page %v", name, sort, got, want)
			}
		}
	}
}

// A search is a prepared statement like the lists, and its generic plan
// cannot walk the customer's tickets testing each against the words (as
// one did when the matches were inline in the statement: a word in 0.1% of
// 100,000 tickets went from 2 to 28 ms in make bench-scale): it reads the
// matches of ticket_search_matches, which plans the GIN scans itself
// (TestTkListPlan100k).
func TestTkSearchIsPreparedOverTheMatches(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	u := create(t, s, tenantA, "Ada", "")
	tkTicket(t, s, tenantA, u.ID, 1, "Refund request zanzibar", tickets.StatusOpen)
	cfg := pool.Config()
	cfg.MaxConns = 1 // one session: its prepared statements are the ones listed
	one, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	s1 := postgres.New(one, time.Now)
	f := tickets.TicketFilter{Q: "zanzibar", SearchConfig: tickets.SearchConfig("zanzibar"),
		Sort: tickets.TicketSort{By: tickets.TicketSortCreated, Desc: true}}
	for range 8 {
		for _, filter := range []tickets.TicketFilter{f, {Sort: f.Sort}} {
			if l, err := s1.ListTickets(ctx, tenantA, filter, paging.Page{Number: 1, Size: 20}); err != nil || l.Total != 1 {
				t.Fatalf("%+v %v", l, err)
			}
		}
	}
	conn, err := one.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var name string
	if err := conn.QueryRow(ctx, `SELECT name FROM pg_prepared_statements WHERE statement LIKE '%ticket_search_matches%'
		AND statement NOT LIKE '%pg_prepared_statements%'`).Scan(&name); err != nil {
		t.Fatalf("no prepared search statement: %v", err)
	}
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	var plan string
	if err := conn.QueryRow(ctx, fmt.Sprintf(`EXPLAIN (FORMAT JSON) EXECUTE %s(%d, 'zanzibar', '%s', 21, 0)`,
		pgx.Identifier{name}.Sanitize(), tenantA, f.SearchConfig)).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, `"Function Name": "ticket_search_matches"`) || strings.Contains(plan, `"Relation Name": "tickets"`) {
		t.Fatalf("the search's generic plan reads more than the matches: %s", plan)
	}
}
