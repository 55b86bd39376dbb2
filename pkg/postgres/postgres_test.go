package postgres_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

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
