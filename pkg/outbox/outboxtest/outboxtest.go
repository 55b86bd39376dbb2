// Package outboxtest lets a test see the NOTIFYs on the outbox channel of
// a schema: that a write sends none (the writers wake their relay after
// the commit instead), and that a wake of another binary does; and it
// gives a store a wake that records what it was called after.
package outboxtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Listener holds a connection LISTENing on the outbox channel of pool's
// schema.
type Listener struct {
	t       testing.TB
	pool    *pgxpool.Pool
	conn    *pgx.Conn
	channel string
	wakes   []int
}

// Listen starts listening; the connection closes when the test ends.
func Listen(t testing.TB, pool *pgxpool.Pool) *Listener {
	t.Helper()
	ctx := context.Background()
	pc, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l := &Listener{t: t, pool: pool, conn: pc.Hijack()}
	t.Cleanup(func() { _ = l.conn.Close(context.Background()) })
	if err := l.conn.QueryRow(ctx, `SELECT 'outbox_' || current_schema()`).Scan(&l.channel); err != nil {
		t.Fatal(err)
	}
	if _, err := l.conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.channel}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return l
}

// Next returns the payload of the next notification (waiting 10 s at
// most). A relay's wake has an empty payload.
func (l *Listener) Next(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := l.conn.WaitForNotification(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n.Payload
}

// NoNotify fails the test when a NOTIFY was sent on the channel since the
// last one read: it sends a marker and wants it next, notifications
// arriving in commit order.
func (l *Listener) NoNotify(t testing.TB) {
	t.Helper()
	if _, err := l.pool.Exec(context.Background(), `SELECT pg_notify($1, 'marker')`, l.channel); err != nil {
		t.Fatal(err)
	}
	if p := l.Next(t); p != "marker" {
		t.Fatalf("a NOTIFY (%q) was sent on %s before the marker", p, l.channel)
	}
}

// Wake is a store's wake under test: it records how many outbox rows
// another connection sees when it is called (after a commit, the rows of
// the transaction are among them).
func (l *Listener) Wake() {
	var n int
	if err := l.pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox`).Scan(&n); err != nil {
		l.t.Error(err)
	}
	l.wakes = append(l.wakes, n)
}

// Wakes are the counts Wake saw, one per call.
func (l *Listener) Wakes() []int { return l.wakes }
