package postgres_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/postgres/pgtest"
)

func TestOpenMigratesOnceConcurrently(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pool, err := postgres.Open(ctx, postgres.Options{URL: url, Schema: "svc", Migrations: os.DirFS("testdata/m1")}, log)
			if err == nil {
				pool.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	pool, err := postgres.Open(ctx, postgres.Options{URL: url, Schema: "svc", Migrations: os.DirFS("testdata/m1")}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil || n != 2 {
		t.Fatalf("migrations recorded: %d %v", n, err)
	}
	// search_path is the service schema: unqualified names resolve there.
	if _, err := pool.Exec(ctx, "INSERT INTO things (name, n, note) VALUES ('a', 1, 'x')"); err != nil {
		t.Fatal(err)
	}
}

func TestErrorMapping(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	pool, err := postgres.Open(ctx, postgres.Options{URL: url, Schema: "svc", Migrations: os.DirFS("testdata/m1")}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, err = pool.Exec(ctx, "INSERT INTO things (name) VALUES ('dup')")
	if err != nil {
		t.Fatal(err)
	}
	_, err = pool.Exec(ctx, "INSERT INTO things (name) VALUES ('dup')")
	if !apperr.Is(postgres.Error(err, "thing"), apperr.Conflict) || !postgres.UniqueViolation(err, "things_name_key") {
		t.Fatalf("unique: %v", err)
	}
	_, err = pool.Exec(ctx, "INSERT INTO things (name, n) VALUES ('neg', -1)")
	if !apperr.Is(postgres.Error(err, "thing"), apperr.Invalid) {
		t.Fatalf("check: %v", err)
	}
	err = pool.QueryRow(ctx, "SELECT id FROM things WHERE name = 'none'").Scan(new(int64))
	if e := postgres.Error(err, "thing"); !apperr.Is(e, apperr.NotFound) || e.(*apperr.Error).Message != "thing not found" {
		t.Fatalf("no rows: %v", e)
	}
	if postgres.Error(nil, "x") != nil {
		t.Fatal("nil must stay nil")
	}
}

func TestInTxRollsBack(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	pool, err := postgres.Open(ctx, postgres.Options{URL: url, Schema: "svc", Migrations: os.DirFS("testdata/m1")}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	boom := errors.New("boom")
	err = postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO things (name) VALUES ('rolled')"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	var n int
	_ = pool.QueryRow(ctx, "SELECT count(*) FROM things").Scan(&n)
	if n != 0 {
		t.Fatalf("rollback failed: %d rows", n)
	}
}

func TestBadSchemaName(t *testing.T) {
	_, err := postgres.Open(context.Background(), postgres.Options{URL: pgtest.AdminURL(), Schema: "x; drop"}, slog.Default())
	if err == nil {
		t.Fatal("want error")
	}
}

// Two services in one database, each migrating its schema as the owner and
// running as its own role: each role uses its own tables and is refused the
// other's.
func TestRuntimeRolesSeeOnlyTheirSchema(t *testing.T) {
	ctx := context.Background()
	roleA, roleB := pgtest.NewRole(t), pgtest.NewRole(t)
	admin := pgtest.NewDatabase(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	open := func(role, schema string) *pgxpool.Pool {
		t.Helper()
		pool, err := postgres.Open(ctx, postgres.Options{URL: pgtest.URLAs(admin, role), MigrateURL: admin,
			Schema: schema, Migrations: os.DirFS("testdata/m1")}, log)
		if err != nil {
			t.Fatalf("open %s as %s: %v", schema, role, err)
		}
		t.Cleanup(pool.Close)
		return pool
	}
	a, b := open(roleA, "svc_a"), open(roleB, "svc_b")

	var user string
	if err := a.QueryRow(ctx, "SELECT current_user").Scan(&user); err != nil || user != roleA {
		t.Fatalf("pool a runs as %q (%v), want %s", user, err, roleA)
	}
	// Own schema: unqualified names, writes, sequences.
	for _, sql := range []string{
		"INSERT INTO things (name, n) VALUES ('a', 1)",
		"UPDATE things SET note = 'x' WHERE name = 'a'",
		"SELECT count(*) FROM things",
		"DELETE FROM things WHERE name = 'a'",
		"SELECT count(*) FROM schema_migrations",
	} {
		if _, err := a.Exec(ctx, sql); err != nil {
			t.Errorf("role a: %s: %v", sql, err)
		}
	}
	if _, err := b.Exec(ctx, "INSERT INTO things (name) VALUES ('b')"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		pool *pgxpool.Pool
		sql  string
	}{
		{"a reads b's table", a, "SELECT name FROM svc_b.things"},
		{"a writes b's table", a, "INSERT INTO svc_b.things (name) VALUES ('from a')"},
		{"b reads a's table", b, "SELECT name FROM svc_a.things"},
		{"a alters its schema", a, "CREATE TABLE svc_a.extra (id int)"},
		{"a rewrites its migration record", a, "DELETE FROM schema_migrations"},
		{"a drops its table", a, "DROP TABLE things"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.pool.Exec(ctx, c.sql)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "42501" {
				t.Fatalf("%s: err %v, want permission denied (42501)", c.sql, err)
			}
		})
	}
	// A second start (a new replica, a restart) changes nothing and works.
	open(roleA, "svc_a")

	// Production: the owner ran `migrate`; the service starts with its own
	// role only, which may create nothing. Nothing pending: it starts.
	own, err := postgres.Open(ctx, postgres.Options{URL: pgtest.URLAs(admin, roleA), Schema: "svc_a",
		Migrations: os.DirFS("testdata/m1")}, log)
	if err != nil {
		t.Fatalf("start with the runtime role alone, migrations applied: %v", err)
	}
	own.Close()
	// A migration pending: the role cannot apply it, and the start says so.
	if _, err := postgres.Open(ctx, postgres.Options{URL: pgtest.URLAs(admin, roleA), Schema: "svc_a",
		Migrations: fstest.MapFS{"001_a.sql": {Data: []byte("SELECT 1")}, "099_new.sql": {Data: []byte("CREATE TABLE later (id int)")}}}, log); err == nil {
		t.Fatal("the runtime role applied a migration")
	}
}

// Roles are cluster-wide: services of many databases (parallel tests,
// replicas) create the same missing role at once, and all of them start.
func TestRuntimeRoleCreatedConcurrently(t *testing.T) {
	ctx := context.Background()
	role := pgtest.NewRole(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dbs := []string{pgtest.NewDatabase(t), pgtest.NewDatabase(t), pgtest.NewDatabase(t)}
	var wg sync.WaitGroup
	errs := make([]error, 2*len(dbs))
	for i := range errs {
		db := dbs[i%len(dbs)]
		wg.Go(func() {
			pool, err := postgres.Open(ctx, postgres.Options{URL: pgtest.URLAs(db, role), MigrateURL: db,
				Schema: "svc", Migrations: os.DirFS("testdata/m1")}, log)
			if err == nil {
				_, err = pool.Exec(ctx, "INSERT INTO things (name) VALUES ($1)", "row"+strconv.Itoa(i))
				pool.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
		}
	}
}

// A runtime role that is a superuser (the local default) or the migrating
// user itself gets no grants and keeps working.
func TestSetupSkipsGrantsForTheOwner(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDatabase(t)
	if err := postgres.Setup(ctx, postgres.Options{URL: db, Schema: "svc", Migrations: os.DirFS("testdata/m1")},
		slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var acl *string
	if err := conn.QueryRow(ctx, "SELECT nspacl::text FROM pg_namespace WHERE nspname = 'svc'").Scan(&acl); err != nil {
		t.Fatal(err)
	}
	if acl != nil {
		t.Fatalf("schema svc has grants %s; the owner needs none", *acl)
	}
}
