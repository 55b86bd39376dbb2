package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// vacuumer stands in for autovacuum when the PostgreSQL server has it off,
// as the CI machines' server has (conf.d/90-ci.conf) and no production
// server should. Without it, every message makes its ticket's row a new
// version in each of the tickets indexes (updated_at is indexed, so the
// update is not HOT) and nothing ever removes the dead ones: a list of the
// newest tickets reads more of them every minute, and after 4-5 minutes at
// 500 req/s the tickets service's requests queue behind its pool (make soak
// without it: p99 16-29 s on every tickets route, 765 requests failed).
// The vacuumer runs VACUUM (ANALYZE) on the soak's database every interval,
// which is what autovacuum's default thresholds do to these tables about as
// often.
type vacuumer struct {
	mu      sync.Mutex
	runs    int
	longest time.Duration
	err     error
	// ran are the runs' spans: the report counts the slow requests that
	// started inside one.
	ran []window
}

// autovacuumOff reports whether the server at dbURL has autovacuum off.
func autovacuumOff(ctx context.Context, dbURL string) (bool, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return false, err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	var v string
	if err := conn.QueryRow(ctx, `SHOW autovacuum`).Scan(&v); err != nil {
		return false, err
	}
	return v == "off", nil
}

// run vacuums the database at dbURL every interval until ctx ends; the first
// error stops it (shown in the report).
func (v *vacuumer) run(ctx context.Context, dbURL string, interval time.Duration) {
	every(ctx, interval, func() bool {
		start := time.Now()
		err := vacuumOnce(ctx, dbURL)
		if ctx.Err() != nil {
			return false
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		v.runs++
		v.longest = max(v.longest, time.Since(start))
		v.ran = append(v.ran, window{from: start, to: time.Now()})
		v.err = err
		return err == nil
	})
}

func vacuumOnce(ctx context.Context, dbURL string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	// Paced as autovacuum paces itself (autovacuum_vacuum_cost_delay 2ms
	// per vacuum_cost_limit 200, the defaults): a VACUUM typed by hand
	// runs unpaced, and its bursts of reads and WAL were over-represented
	// among the soak's slowest requests (9-11% of them started during one,
	// while it ran 4% of the time).
	if _, err := conn.Exec(ctx, `SET vacuum_cost_delay = '2ms'`); err != nil {
		return err
	}
	// Every table of the database (each service's schema); a table another
	// session is vacuuming is skipped, as autovacuum would.
	_, err = conn.Exec(ctx, `VACUUM (ANALYZE, SKIP_LOCKED)`)
	return err
}

// windows are the spans of the runs so far.
func (v *vacuumer) windows() []window {
	if v == nil {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.ran)
}

// String is the report's line.
func (v *vacuumer) String() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := fmt.Sprintf("VACUUM (ANALYZE) of the database ran %d times, the longest took %s", v.runs, v.longest.Round(time.Millisecond))
	if v.err != nil {
		s += fmt.Sprintf("; it stopped on an error: %v", v.err)
	}
	return s
}
