package outbox

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

const (
	// pendingTTL is how long one count serves scrapes.
	pendingTTL = 1500 * time.Millisecond
	// pendingTimeout bounds the count, so that a scrape during a database
	// outage answers (without the gauges) instead of hanging.
	pendingTimeout = 2 * time.Second
)

var (
	pendingDesc = prometheus.NewDesc("outbox_pending_events",
		"Events committed to this service's outbox table and not relayed to JetStream yet.", nil, nil)
	oldestDesc = prometheus.NewDesc("outbox_oldest_event_age_seconds",
		"Age of the oldest event waiting in the outbox table (0 when it is empty): grows while the relay cannot publish.", nil, nil)
)

// PendingCollector reports the events waiting in the outbox table of db's
// search_path schema, counted at scrape time (at most once per 1.5 s, within
// 2 s). When the count fails the gauges are absent from that scrape and
// outbox_pending_errors_total counts it; the scrape itself succeeds. now is
// the clock of the cache.
type PendingCollector struct {
	db     *pgxpool.Pool
	now    func() time.Time
	errors prometheus.Counter

	mu       sync.Mutex
	ok       bool
	pending  float64
	oldest   float64
	cachedAt time.Time
}

// NewPendingCollector returns the collector for the outbox of db.
func NewPendingCollector(db *pgxpool.Pool, now func() time.Time) *PendingCollector {
	return &PendingCollector{db: db, now: now, errors: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "outbox_pending_errors_total",
		Help: "Scrapes that could not count the outbox table (its gauges are absent then)."})}
}

// Describe implements prometheus.Collector.
func (c *PendingCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDesc
	ch <- oldestDesc
	c.errors.Describe(ch)
}

// Collect implements prometheus.Collector.
func (c *PendingCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.now(); c.cachedAt.IsZero() || now.Before(c.cachedAt) || now.Sub(c.cachedAt) >= pendingTTL {
		c.ok = c.count() == nil
		if !c.ok {
			c.errors.Inc()
		}
		c.cachedAt = now
	}
	if c.ok {
		ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, c.pending)
		ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, c.oldest)
	}
	c.errors.Collect(ch)
}

func (c *PendingCollector) count() error {
	ctx, cancel := context.WithTimeout(context.Background(), pendingTimeout)
	defer cancel()
	var n int64
	var age float64
	// The table is near empty while the relay keeps up: the count is cheap
	// then, and when it is not, its size is what the operator wants to see.
	err := c.db.QueryRow(ctx, `SELECT count(*), COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 FROM outbox`).Scan(&n, &age)
	if err != nil {
		return err
	}
	c.pending, c.oldest = float64(n), max(age, 0)
	return nil
}
