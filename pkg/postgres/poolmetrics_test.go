package postgres_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/postgres/pgtest"
)

// The pool's state is exported at scrape time: a held connection shows as
// acquired, and a second acquire while the only connection is held counts
// as one that had to wait.
func TestPoolCollector(t *testing.T) {
	cfg, err := pgxpool.ParseConfig(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(postgres.PoolCollector(pool))

	conn, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error)
	go func() {
		c, err := pool.Acquire(t.Context())
		if err == nil {
			c.Release()
		}
		waited <- err
	}()
	want := `
# HELP db_pool_acquired_connections Connections of the pool in use.
# TYPE db_pool_acquired_connections gauge
db_pool_acquired_connections 1
# HELP db_pool_max_connections The pool's maximum size.
# TYPE db_pool_max_connections gauge
db_pool_max_connections 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "db_pool_acquired_connections", "db_pool_max_connections"); err != nil {
		t.Error(err)
	}
	// The second acquire counts as empty once it has started waiting.
	deadline := time.Now().Add(5 * time.Second)
	for pool.Stat().EmptyAcquireCount() < 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP db_pool_empty_acquires_total Acquires that had to wait because no connection was idle.
# TYPE db_pool_empty_acquires_total counter
db_pool_empty_acquires_total 1
`), "db_pool_empty_acquires_total"); err != nil {
		t.Error(err)
	}
	conn.Release()
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
}
