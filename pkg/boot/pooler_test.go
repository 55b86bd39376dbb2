package boot

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/fstest"

	"supportplatform.dev/pkg/config"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/postgres/pgtest"
)

// DATABASE_POOLER is none or transaction, anything else stops the start;
// behind a transaction pooler the session pool (importreply's locks) is on
// DATABASE_SESSION_URL, and there is none without it.
func TestDatabasePooler(t *testing.T) {
	role := pgtest.NewRole(t)
	db, natsURL := pgtest.NewDatabase(t), natstest.Start(t)
	migrations := fstest.MapFS{"001_init.sql": {Data: []byte("CREATE TABLE t (id int);")}}
	open := func(env map[string]string) (*Deps, error) {
		t.Helper()
		env["DATABASE_URL"], env["DATABASE_MIGRATE_URL"], env["NATS_URL"] = pgtest.URLAs(db, role), db, natsURL
		var cfg config.Common
		if err := config.Load(func(k string) string { return env[k] }, &cfg); err != nil {
			t.Fatal(err)
		}
		d, err := Open(context.Background(), cfg, Options{Service: "poolertest", Schema: "boottest", Migrations: migrations, Outbox: true}, io.Discard)
		if d != nil {
			t.Cleanup(func() { _ = d.Close() })
		}
		return d, err
	}
	if _, err := open(map[string]string{"DATABASE_POOLER": "pgbouncer"}); err == nil || !strings.Contains(err.Error(), "DATABASE_POOLER") {
		t.Fatalf("DATABASE_POOLER=pgbouncer: %v, want refused", err)
	}
	d, err := open(map[string]string{"DATABASE_POOLER": "transaction"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.SessionPool(t.Context(), 2); !errors.Is(err, postgres.ErrNoSession) {
		t.Fatalf("session pool behind a transaction pooler without DATABASE_SESSION_URL: %v", err)
	}
	d, err = open(map[string]string{"DATABASE_POOLER": "transaction", "DATABASE_SESSION_URL": pgtest.URLAs(db, role)})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := d.SessionPool(t.Context(), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var schema string
	if err := pool.QueryRow(t.Context(), "SELECT current_schema()").Scan(&schema); err != nil || schema != "boottest" {
		t.Fatalf("session pool's schema %q (%v)", schema, err)
	}
	// Directly, the session pool is on DATABASE_URL.
	d, err = open(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	direct, err := d.SessionPool(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	direct.Close()
}
