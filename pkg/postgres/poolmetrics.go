package postgres

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// PoolCollector exports the connection pool's state (pgxpool.Stat) at
// scrape time: how many connections are in use, idle and allowed, and how
// often and how long requests waited for one. A pool that is often empty
// (db_pool_empty_acquires_total rising, db_pool_acquire_wait_seconds_total
// growing) is the first thing to look at when a service's routes all slow
// down together.
func PoolCollector(pool *pgxpool.Pool) prometheus.Collector { return poolCollector{pool} }

type poolCollector struct{ pool *pgxpool.Pool }

var (
	poolAcquired = prometheus.NewDesc("db_pool_acquired_connections", "Connections of the pool in use.", nil, nil)
	poolIdle     = prometheus.NewDesc("db_pool_idle_connections", "Idle connections of the pool.", nil, nil)
	poolMax      = prometheus.NewDesc("db_pool_max_connections", "The pool's maximum size.", nil, nil)
	poolAcquires = prometheus.NewDesc("db_pool_acquires_total", "Connections acquired from the pool.", nil, nil)
	poolEmpty    = prometheus.NewDesc("db_pool_empty_acquires_total",
		"Acquires that had to wait because no connection was idle.", nil, nil)
	poolWait = prometheus.NewDesc("db_pool_acquire_wait_seconds_total",
		"Time spent waiting for a connection, summed over acquires.", nil, nil)
)

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolAcquired, poolIdle, poolMax, poolAcquires, poolEmpty, poolWait} {
		ch <- d
	}
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	ch <- prometheus.MustNewConstMetric(poolAcquired, prometheus.GaugeValue, float64(s.AcquiredConns()))
	ch <- prometheus.MustNewConstMetric(poolIdle, prometheus.GaugeValue, float64(s.IdleConns()))
	ch <- prometheus.MustNewConstMetric(poolMax, prometheus.GaugeValue, float64(s.MaxConns()))
	ch <- prometheus.MustNewConstMetric(poolAcquires, prometheus.CounterValue, float64(s.AcquireCount()))
	ch <- prometheus.MustNewConstMetric(poolEmpty, prometheus.CounterValue, float64(s.EmptyAcquireCount()))
	ch <- prometheus.MustNewConstMetric(poolWait, prometheus.CounterValue, s.AcquireDuration().Seconds())
}
