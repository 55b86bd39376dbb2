package servicetest

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// MigrateTest checks a service's commands without serving: an unknown
// command is refused, `<name> migrate` applies the migrations (twice, as
// migrating is idempotent) and leaves schema with exactly tables (sorted),
// needing no more than Env gives it; then serving with each of bad (a
// setting or a few) is refused before it listens.
func MigrateTest(t *testing.T, name string, run Run, schema string, tables []string, bad ...map[string]string) {
	t.Helper()
	env := Env(t, name, nil, false)
	getenv := func(k string) string { return env[k] }
	ctx := context.Background()
	if err := run(ctx, []string{name, "bogus"}, getenv, io.Discard); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("bogus command: %v", err)
	}
	for range 2 {
		if err := run(ctx, []string{name, "migrate"}, getenv, io.Discard); err != nil {
			t.Fatalf("migrate: %v", err)
		}
	}
	conn, err := pgx.Connect(ctx, env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`, schema)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != strings.Join(tables, " ") {
		t.Fatalf("tables of %s: %q, want %q", schema, got, tables)
	}
	for _, b := range bad {
		saved := map[string]string{}
		for k, v := range b {
			saved[k] = env[k]
			env[k] = v
		}
		// A setting that is wrongly accepted serves until the deadline.
		bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := run(bctx, []string{name}, getenv, io.Discard)
		cancel()
		if err == nil {
			t.Fatalf("serving with %v succeeded", b)
		}
		for k, v := range saved {
			env[k] = v
		}
	}
}
