package postgres_test

import (
	"context"
	"slices"
	"testing"
)

// Migration 012: the tables rewritten most are vacuumed after a fixed or a
// small share of dead rows, not PostgreSQL's default 20%.
func TestAutovacuumSettingsOfTheBusiestTables(t *testing.T) {
	_, pool := newStore(t)
	want := map[string][]string{
		"tickets":              {"autovacuum_vacuum_scale_factor=0.02", "autovacuum_analyze_scale_factor=0.05"},
		"ticket_counts":        {"autovacuum_vacuum_scale_factor=0", "autovacuum_vacuum_threshold=1000"},
		"ticket_filter_counts": {"autovacuum_vacuum_scale_factor=0", "autovacuum_vacuum_threshold=1000"},
		"outbox":               {"autovacuum_vacuum_scale_factor=0", "autovacuum_vacuum_threshold=1000"},
	}
	for table, opts := range want {
		var got []string
		// to_regclass resolves the name in the pool's search_path: the schema.
		if err := pool.QueryRow(context.Background(),
			`SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = to_regclass($1)`, table).Scan(&got); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		for _, o := range opts {
			if !slices.Contains(got, o) {
				t.Errorf("%s: options %v, want %s", table, got, o)
			}
		}
	}
}
