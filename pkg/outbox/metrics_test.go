package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"supportplatform.dev/pkg/clocktest"
	"supportplatform.dev/pkg/postgres"
)

// gauges scrapes reg: the outbox gauges (nil when absent) and the errors.
func gauges(t *testing.T, reg *prometheus.Registry) (pending, oldest *float64, errs float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("scrape failed: %v", err)
	}
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		switch mf.GetName() {
		case "outbox_pending_events":
			v := m.GetGauge().GetValue()
			pending = &v
		case "outbox_oldest_event_age_seconds":
			v := m.GetGauge().GetValue()
			oldest = &v
		case "outbox_pending_errors_total":
			errs = m.GetCounter().GetValue()
		}
	}
	return pending, oldest, errs
}

func TestPendingCollector(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	clock := clocktest.New(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	reg := prometheus.NewRegistry()
	if err := reg.Register(NewPendingCollector(db, clock.Now)); err != nil {
		t.Fatal(err)
	}
	add := func(n int) {
		t.Helper()
		if err := postgres.InTx(ctx, db, func(tx pgx.Tx) error {
			for range n {
				m, err := Event(ctx, "note.added", 9, time.Now(), noteAdded{Body: "x"})
				if err != nil {
					return err
				}
				if err := Add(ctx, tx, m); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}

	if p, o, e := gauges(t, reg); p == nil || *p != 0 || o == nil || *o != 0 || e != 0 {
		t.Fatalf("empty outbox: pending %v, oldest %v, errors %v", p, o, e)
	}
	add(3)
	if _, err := db.Exec(ctx, `UPDATE outbox SET created_at = now() - interval '90 seconds'`); err != nil {
		t.Fatal(err)
	}
	// Inside the cache window the table is not counted again.
	if p, _, _ := gauges(t, reg); *p != 0 {
		t.Fatalf("a scrape inside the cache window counted again: %v", *p)
	}
	clock.Advance(2 * time.Second)
	if p, o, _ := gauges(t, reg); *p != 3 || *o < 90 || *o > 600 {
		t.Fatalf("after three events: pending %v, oldest %v s", *p, *o)
	}

	// The database gone: no gauges, an error, and the scrape succeeds.
	db.Close()
	clock.Advance(2 * time.Second)
	if p, o, e := gauges(t, reg); p != nil || o != nil || e != 1 {
		t.Fatalf("database closed: pending %v, oldest %v, errors %v", p, o, e)
	}
}
