package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"supportplatform.dev/deploy/seed"
)

// The tickets-scale case (make bench-scale; run only when named): the cost
// of the tickets routes as one customer's tickets grow, beside 99 other
// customers of 10,000 tickets each. Issue 26's target: p50 at the largest
// size within 1.5x of p50 at the smallest for every operation, and p99
// under 50 ms at 1,000,000 tickets with 4 workers.

// Settings of tickets-scale (flags -scale-sizes, -scale-requests,
// -scale-c, -scale-others).
var (
	scaleSizes    = []int{10_000, 100_000, 1_000_000}
	scaleRequests = 200
	scaleWorkers  = 4
	scaleOthers   = 99
)

const (
	scaleOtherTickets  = 10_000
	scaleEndUsers      = 1000
	scaleOtherCustomer = 900_000_000 // the other customers' ids (rows only: they never log in)
	scaleP99Budget     = 50 * time.Millisecond
	scaleP50Ratio      = 1.5
)

func parseScaleSizes(raw string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(raw, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1000 || (len(out) > 0 && n <= out[len(out)-1]) {
			return nil, fmt.Errorf("-scale-sizes: %q: increasing ticket counts of at least 1000", raw)
		}
		out = append(out, n)
	}
	return out, nil
}

func scaleCase() *benchCase {
	return &benchCase{
		Name: "tickets-scale", Named: true, Needs: []string{"auth", "mailingest", "tickets"}, Customer: "Bench Scale",
		Note:    "one customer's tickets grown by SQL to each -scale-sizes (3 messages each) beside -scale-others customers of 10,000; p50/p99 of each operation at each size",
		Latency: ticketsScale,
	}
}

// scaleOp is one measured operation: the n-th request's method, path and
// body, and the status it must answer.
type scaleOp struct {
	name   string
	expect int
	req    func(n int) (method, path, body string)
}

type scaleFigures struct{ p50, p99 time.Duration }

func ticketsScale(ctx context.Context, e *benchEnv) ([]string, error) {
	var lines []string
	logf := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	t, err := seed.SeedTickets(ctx, e.API, e.DB, 0)
	if err != nil {
		return nil, err
	}
	users, err := seed.ScaleEndUsers(ctx, e.DB, t.CustomerID, scaleEndUsers)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for k := range scaleOthers {
		cid := int64(scaleOtherCustomer + k)
		others, err := seed.ScaleEndUsers(ctx, e.DB, cid, 10)
		if err == nil {
			err = seed.ScaleTickets(ctx, e.DB, cid, 1, others, 0, scaleOtherTickets)
		}
		if err != nil {
			return lines, err
		}
	}
	if err := seed.ScaleVacuum(ctx, e.DB); err != nil {
		return lines, err
	}
	logf("seeded %d other customers x %d tickets (3 messages each) in %s", scaleOthers, scaleOtherTickets, time.Since(start).Round(time.Second))
	results := map[string][]scaleFigures{}
	var order []string
	seeded := 0
	for _, size := range scaleSizes {
		start := time.Now()
		if err := seed.ScaleTickets(ctx, e.DB, t.CustomerID, t.ChannelID, users, seeded, size); err != nil {
			return lines, err
		}
		if err := seed.ScaleVacuum(ctx, e.DB); err != nil {
			return lines, err
		}
		seeded = size
		logf("size %d: the customer's tickets grown to %d (+%d with 3 messages each) by SQL in %s", size, size, size, time.Since(start).Round(time.Second))
		ops, err := scaleOps(ctx, e, t, users, size)
		if err != nil {
			return lines, err
		}
		for _, op := range ops {
			f, err := measureScaleOp(ctx, e, op)
			if err != nil {
				return lines, fmt.Errorf("size %d, %s: %w", size, op.name, err)
			}
			if _, ok := results[op.name]; !ok {
				order = append(order, op.name)
			}
			results[op.name] = append(results[op.name], f)
		}
	}
	// The table: p50/p99 (ms) per size, the p50 ratio largest/smallest.
	head := fmt.Sprintf("%-32s", "operation")
	for _, size := range scaleSizes {
		head += fmt.Sprintf(" %19s", fmt.Sprintf("%d p50/p99", size))
	}
	logf("%s %8s", head, "p50 x")
	var misses []string
	for _, name := range order {
		row := fmt.Sprintf("%-32s", name)
		fs := results[name]
		for _, f := range fs {
			row += fmt.Sprintf(" %19s", fmt.Sprintf("%.2f/%.2f", ms(f.p50), ms(f.p99)))
		}
		ratio := float64(fs[len(fs)-1].p50) / float64(max(fs[0].p50, time.Microsecond))
		row += fmt.Sprintf(" %8.2f", ratio)
		if len(fs) > 1 && ratio > scaleP50Ratio {
			row += " p50 over 1.5x"
			misses = append(misses, name)
		}
		if scaleSizes[len(scaleSizes)-1] >= 1_000_000 && fs[len(fs)-1].p99 > scaleP99Budget {
			row += " p99 over 50 ms"
			misses = append(misses, name)
		}
		logf("%s", row)
	}
	if len(misses) > 0 {
		logf("over the targets: %s", strings.Join(misses, ", "))
	}
	return lines, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// scaleOps are the operations at a size: the list (first page and page 50,
// default sort, each other sort and each filter), a keyset page deep in the
// list, the search of a word in 0.1% of tickets, a ticket and its messages,
// the summary (uncached: a ticket asked for the first time; cached), an
// agent message, and the end-user list with q.
func scaleOps(ctx context.Context, e *benchEnv, t seed.Tickets, users []int64, size int) ([]scaleOp, error) {
	get := func(path string) func(int) (string, string, string) {
		return func(int) (string, string, string) { return http.MethodGet, path, "" }
	}
	var ops []scaleOp
	filters := []struct{ name, query string }{
		{"default", ""},
		{"sort=dateUpdated", "&sort=dateUpdated"},
		{"sort=ticketID", "&sort=ticketID"},
		{"status=Pending", "&status=Pending"},
		{"isClosed=false", "&isClosed=false"},
		{"channelId", "&channelId=" + strconv.FormatInt(t.ChannelID, 10)},
		{"endUserId", "&endUserId=" + strconv.FormatInt(users[17], 10)},
		{"customerRepId", "&customerRepId=1004"},
		{"createdFrom/To (a week)", "&createdFrom=2026-10-20&createdTo=2026-10-26"},
	}
	for _, f := range filters {
		ops = append(ops, scaleOp{name: "list " + f.name, expect: 200, req: get("/api/Tickets?pageSize=20" + f.query)},
			scaleOp{name: "list " + f.name + " page 50", expect: 200, req: get("/api/Tickets?pageSize=20&pageNumber=50" + f.query)})
	}
	// A keyset page half way down the list: the cursor of page size/40.
	deep := max(size/40, 50)
	data, err := e.API.Do(ctx, http.MethodGet, fmt.Sprintf("/api/Tickets?pageSize=20&pageNumber=%d", deep), "", http.StatusOK)
	if err != nil {
		return nil, err
	}
	var page struct {
		NextCursor *string `json:"nextCursor"`
	}
	if err := json.Unmarshal(data, &page); err != nil || page.NextCursor == nil {
		return nil, fmt.Errorf("no cursor on page %d: %v", deep, err)
	}
	ops = append(ops,
		scaleOp{name: "list pageNumber=size/40", expect: 200, req: get(fmt.Sprintf("/api/Tickets?pageSize=20&pageNumber=%d", deep))},
		scaleOp{name: "list cursor (page size/40)", expect: 200, req: get("/api/Tickets?pageSize=20&cursor=" + url.QueryEscape(*page.NextCursor))},
		scaleOp{name: "search q (0.1% of tickets)", expect: 200, req: get("/api/Tickets?pageSize=20&q=" + seed.ScaleWord)},
		scaleOp{name: "end users q", expect: 200, req: get("/api/EndUsers?pageSize=20&q=" + url.QueryEscape("user 17"))},
	)
	// Tickets spread over the whole list (the newest and the oldest).
	var ids []int64
	rows, err := e.DB.Query(ctx, `SELECT ticket_id FROM tickets.tickets WHERE customer_id = $1 ORDER BY random() LIMIT $2`,
		t.CustomerID, 4*scaleRequests)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(ids) < 2*scaleRequests {
		return nil, errors.New("too few tickets for the operations")
	}
	id := func(n int) string { return strconv.FormatInt(ids[n%len(ids)], 10) }
	uncached := ids[scaleRequests:] // never asked before at this size
	ops = append(ops,
		scaleOp{name: "ticket", expect: 200, req: func(n int) (string, string, string) { return http.MethodGet, "/api/Tickets/" + id(n), "" }},
		scaleOp{name: "ticket messages", expect: 200, req: func(n int) (string, string, string) {
			return http.MethodGet, "/api/TicketMessages?ticketId=" + id(n), ""
		}},
		scaleOp{name: "summary uncached", expect: 200, req: func(n int) (string, string, string) {
			return http.MethodGet, "/api/Tickets/" + strconv.FormatInt(uncached[n%len(uncached)], 10) + "/summary", ""
		}},
		scaleOp{name: "summary cached", expect: 200, req: func(n int) (string, string, string) {
			return http.MethodGet, "/api/Tickets/" + id(0) + "/summary", ""
		}},
		scaleOp{name: "message create", expect: 201, req: func(n int) (string, string, string) {
			return http.MethodPost, "/api/TicketMessages", `{"ticketID":` + id(n) + `,"senderType":"Agent","message":"The replacement ` +
				strconv.Itoa(n) + ` left our warehouse today."}`
		}},
	)
	return ops, nil
}

// measureScaleOp sends scaleRequests requests of op from scaleWorkers
// workers (after scaleWorkers unmeasured ones) and returns the percentiles.
func measureScaleOp(ctx context.Context, e *benchEnv, op scaleOp) (scaleFigures, error) {
	var next atomic.Int64
	next.Store(-int64(scaleWorkers)) // warm-up requests: negative n, not recorded
	var mu sync.Mutex
	var took []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	for range scaleWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := int(next.Add(1) - 1)
				if n >= scaleRequests || ctx.Err() != nil {
					return
				}
				method, path, body := op.req(max(n, 0))
				if n < 0 {
					method, path, body = op.req(scaleRequests + scaleWorkers + n) // distinct from the measured ones
				}
				began := time.Now()
				_, err := e.API.Do(ctx, method, path, body, op.expect)
				d := time.Since(began)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if n >= 0 {
					took = append(took, d)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return scaleFigures{}, firstErr
	}
	if len(took) == 0 {
		return scaleFigures{}, ctx.Err()
	}
	slices.Sort(took)
	pct := func(p float64) time.Duration { return took[min(len(took)-1, int(p*float64(len(took))))] }
	return scaleFigures{p50: pct(0.50), p99: pct(0.99)}, nil
}
