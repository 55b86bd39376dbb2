package postgres_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/postgres/pgtest"
)

func TestParsePooler(t *testing.T) {
	for in, want := range map[string]postgres.Pooler{"": postgres.PoolerNone, "none": postgres.PoolerNone, "transaction": postgres.PoolerTransaction} {
		if got, err := postgres.ParsePooler(in); err != nil || got != want {
			t.Errorf("ParsePooler(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"pgbouncer", "session", "Transaction", " transaction"} {
		if _, err := postgres.ParsePooler(in); err == nil || !strings.Contains(err.Error(), "DATABASE_POOLER") {
			t.Errorf("ParsePooler(%q) = %v, want an error naming DATABASE_POOLER", in, err)
		}
	}
}

func TestSessionURL(t *testing.T) {
	const db, session = "postgres://a@pooler/db", "postgres://a@pg/db"
	for _, c := range []struct {
		session string
		p       postgres.Pooler
		want    string
	}{
		{"", postgres.PoolerNone, db},
		{session, postgres.PoolerNone, session},
		{"", postgres.PoolerTransaction, ""},
		{session, postgres.PoolerTransaction, session},
	} {
		if got := postgres.SessionURL(db, c.session, c.p); got != c.want {
			t.Errorf("SessionURL(%q, %q) = %q, want %q", c.session, c.p, got, c.want)
		}
	}
}

// Setup gives a runtime role the service's schema as its search_path in
// the database; a transaction-mode pool then runs without search_path in
// the startup packet and without named prepared statements, and finds its
// tables by the role's setting.
func TestTransactionPoolerUsesTheRolesSearchPath(t *testing.T) {
	ctx := context.Background()
	role := pgtest.NewRole(t)
	admin := pgtest.NewDatabase(t)
	log := slog.New(slog.DiscardHandler)
	pool, err := postgres.Open(ctx, postgres.Options{URL: pgtest.URLAs(admin, role), MigrateURL: admin, Schema: "svc",
		Migrations: os.DirFS("testdata/m1"), Pooler: postgres.PoolerTransaction}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	cc := pool.Config().ConnConfig
	if _, ok := cc.RuntimeParams["search_path"]; ok {
		t.Errorf("startup parameters %v: a pooler refuses search_path", cc.RuntimeParams)
	}
	if cc.DefaultQueryExecMode != pgx.QueryExecModeCacheDescribe {
		t.Errorf("exec mode %v, want cache_describe", cc.DefaultQueryExecMode)
	}
	for i := range 3 { // the second run of a statement uses the cached description
		if _, err := pool.Exec(ctx, "INSERT INTO things (name, n) VALUES ($1, $2)", fmt.Sprint("x", i), i); err != nil {
			t.Fatal(err)
		}
	}
	var prepared int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_prepared_statements").Scan(&prepared); err != nil || prepared != 0 {
		t.Errorf("named prepared statements in the session: %d (%v), want none", prepared, err)
	}
	// The session connection (the relay's LISTEN) follows the same rules.
	conn, err := postgres.Connect(ctx, pgtest.URLAs(admin, role), "svc", postgres.PoolerTransaction)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var schema string
	if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil || schema != "svc" {
		t.Errorf("current_schema() = %q (%v), want svc", schema, err)
	}
	// Setup again (every start with DATABASE_MIGRATE_URL) leaves the one
	// setting as it is.
	if err := postgres.Setup(ctx, postgres.Options{URL: pgtest.URLAs(admin, role), MigrateURL: admin, Schema: "svc", Migrations: os.DirFS("testdata/m1")}, log); err != nil {
		t.Fatal(err)
	}
	var settings []string
	if err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(c), '{}') FROM pg_db_role_setting s, unnest(s.setconfig) c
		WHERE s.setrole = (SELECT oid FROM pg_roles WHERE rolname = $1)`, role).Scan(&settings); err != nil {
		t.Fatal(err)
	}
	if len(settings) != 1 || settings[0] != "search_path=svc" {
		t.Errorf("role settings %v, want [search_path=svc]", settings)
	}
}

// A role whose search_path is not the schema (created by hand, its
// setting never made) fails the start behind a transaction pooler with
// the statement that fixes it, instead of failing every query later.
func TestTransactionPoolerRefusesAWrongSearchPath(t *testing.T) {
	ctx := context.Background()
	role := pgtest.NewRole(t)
	admin := pgtest.NewDatabase(t)
	log := slog.New(slog.DiscardHandler)
	o := postgres.Options{URL: pgtest.URLAs(admin, role), MigrateURL: admin, Schema: "svc", Migrations: os.DirFS("testdata/m1")}
	if err := postgres.Setup(ctx, o, log); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "ALTER ROLE "+pgx.Identifier{role}.Sanitize()+" IN DATABASE "+
		pgx.Identifier{conn.Config().Database}.Sanitize()+" RESET search_path"); err != nil {
		t.Fatal(err)
	}
	o.Migrations, o.MigrateURL, o.Pooler = nil, "", postgres.PoolerTransaction
	_, err = postgres.Open(ctx, o, log)
	if err == nil || !strings.Contains(err.Error(), `SET search_path TO "svc"`) {
		t.Fatalf("open with the role's search_path reset: %v, want the ALTER ROLE to run", err)
	}
	if _, err := postgres.Connect(ctx, o.URL, "svc", postgres.PoolerTransaction); err == nil {
		t.Fatal("Connect accepted the wrong search_path")
	}
	// Directly (no pooler) the startup packet sets it: the same role works.
	o.Pooler = postgres.PoolerNone
	pool, err := postgres.Open(ctx, o, log)
	if err != nil {
		t.Fatal(err)
	}
	pool.Close()
}

// describe_exec's two round trips may reach two server connections behind
// a transaction pooler: such a URL is refused; exec and simple_protocol are
// kept as given.
func TestTransactionPoolerExecModes(t *testing.T) {
	ctx := context.Background()
	role := pgtest.NewRole(t)
	admin := pgtest.NewDatabase(t)
	url := pgtest.URLAs(admin, role)
	log := slog.New(slog.DiscardHandler)
	o := postgres.Options{URL: url + "&default_query_exec_mode=describe_exec", MigrateURL: admin, Schema: "svc",
		Migrations: os.DirFS("testdata/m1"), Pooler: postgres.PoolerTransaction}
	if _, err := postgres.Open(ctx, o, log); err == nil || !strings.Contains(err.Error(), "describe_exec") {
		t.Fatalf("describe_exec behind a transaction pooler: %v", err)
	}
	for mode, want := range map[string]pgx.QueryExecMode{"exec": pgx.QueryExecModeExec, "simple_protocol": pgx.QueryExecModeSimpleProtocol} {
		o.URL = url + "&default_query_exec_mode=" + mode
		pool, err := postgres.Open(ctx, o, log)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if got := pool.Config().ConnConfig.DefaultQueryExecMode; got != want {
			t.Errorf("%s: exec mode %v", mode, got)
		}
		if _, err := pool.Exec(ctx, "INSERT INTO things (name, n) VALUES ($1, $2)", mode, 1); err != nil {
			t.Errorf("%s: %v", mode, err)
		}
		pool.Close()
	}
}
