package stack

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/randid"
)

// A real pgbouncer (Debian's, installed when missing) in front of a fresh
// database: in transaction mode, 20 clients in pgx's cache_describe mode
// (what DATABASE_POOLER=transaction selects) share at most 3 server
// connections without an error, and a search_path startup parameter (what
// a direct connection sends) is refused; the session alias keeps a
// session across statements (a session advisory lock).
func TestPgBouncerInTransactionMode(t *testing.T) {
	ctx := t.Context()
	in := LocalInfra(testLog(t))
	db, err := in.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.DropDatabase(context.Background(), db) })
	role := "t_pgb_" + randid.Hex(5)
	admin, err := pgx.Connect(ctx, in.DatabaseURL(db))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	for _, sql := range []string{
		"CREATE ROLE " + role + " LOGIN",
		"CREATE SCHEMA svc AUTHORIZATION " + role,
		"ALTER ROLE " + role + " IN DATABASE " + db + " SET search_path TO svc",
		"CREATE TABLE svc.items (id bigserial PRIMARY KEY, n int NOT NULL)",
		"ALTER TABLE svc.items OWNER TO " + role,
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	t.Cleanup(func() {
		// After the database is dropped (cleanups run last first).
		conn, err := pgx.Connect(context.Background(), in.PostgresURL)
		if err == nil {
			_, _ = conn.Exec(context.Background(), "DROP ROLE IF EXISTS "+role)
			_ = conn.Close(context.Background())
		}
	})
	pgb, err := StartPgBouncer(ctx, in, PgBouncerOptions{Database: db, Users: []string{role}, PoolSize: 3, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pgb.Stop(); err != nil {
			t.Error(err)
		}
	})

	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for w := range 20 {
		wg.Go(func() {
			conn, err := pgx.Connect(ctx, pgb.URL(role)+"&default_query_exec_mode=cache_describe")
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close(context.Background())
			for i := range 25 {
				tx, err := conn.Begin(ctx)
				if err == nil {
					_, err = tx.Exec(ctx, "INSERT INTO items (n) VALUES ($1)", w*100+i)
					if err == nil {
						err = tx.Commit(ctx)
					}
				}
				if err == nil {
					var n int
					err = conn.QueryRow(ctx, "SELECT count(*) FROM items WHERE n >= $1", 0).Scan(&n)
				}
				if err != nil {
					errs <- fmt.Errorf("client %d, round %d: %w", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var n int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM svc.items").Scan(&n); err != nil || n != 500 {
		t.Fatalf("items %d (%v), want 500", n, err)
	}
	pools, err := pgb.Pools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range pools {
		if p.Database == db && p.User == role {
			found = true
			t.Logf("pool %s/%s (%s): %d server connections for 20 clients", p.Database, p.User, p.Mode, p.Servers())
			if p.Mode != "transaction" || p.Servers() == 0 || p.Servers() > 3 {
				t.Errorf("pool %+v: want transaction mode on 1-3 server connections", p)
			}
		}
	}
	if !found {
		t.Fatalf("SHOW POOLS has no pool %s/%s: %+v", db, role, pools)
	}

	// A direct connection's configuration sends search_path at startup.
	cc, err := pgx.ParseConfig(pgb.URL(role))
	if err != nil {
		t.Fatal(err)
	}
	cc.RuntimeParams["search_path"] = "svc"
	if conn, err := pgx.ConnectConfig(ctx, cc); err == nil {
		conn.Close(ctx)
		t.Error("pgbouncer accepted a search_path startup parameter")
	} else if !strings.Contains(err.Error(), "search_path") {
		t.Errorf("search_path at startup through pgbouncer: %v, want it refused", err)
	}

	// The session alias: a session lock outlives its statement.
	conn, err := pgx.Connect(ctx, pgb.SessionURL(role))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var got, again bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock(42)").Scan(&got); err != nil || !got {
		t.Fatalf("lock: %v %v", got, err)
	}
	if err := conn.QueryRow(ctx, "SELECT pg_advisory_unlock(42)").Scan(&again); err != nil || !again {
		t.Fatalf("the session alias lost the lock between two statements: %v %v", again, err)
	}
}
