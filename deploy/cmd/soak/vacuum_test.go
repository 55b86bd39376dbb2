package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/deploy/stack"
)

// The vacuumer on the real PostgreSQL: it reads the server's setting, and
// its runs remove the dead versions an update leaves.
func TestVacuumerOnRealPostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in := stack.LocalInfra(nil)
	name, err := in.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.DropDatabase(context.Background(), name) })
	url := in.DatabaseURL(name)

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var setting string
	if err := conn.QueryRow(ctx, `SHOW autovacuum`).Scan(&setting); err != nil {
		t.Fatal(err)
	}
	off, err := autovacuumOff(ctx, url)
	if err != nil || off != (setting == "off") {
		t.Fatalf("autovacuumOff = %v, %v; the server says autovacuum = %s", off, err, setting)
	}

	// 1,000 rows updated 3 times: 3,000 dead versions. The writer's session
	// ends before the count is read: a session reports its statistics when
	// it ends (or up to 10 s after it goes idle).
	setup, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Exec(ctx, `CREATE TABLE t (id int PRIMARY KEY, v int);
		ALTER TABLE t SET (autovacuum_enabled = false);
		INSERT INTO t SELECT g, 0 FROM generate_series(1, 1000) g;
		UPDATE t SET v = 1; UPDATE t SET v = 2; UPDATE t SET v = 3`); err != nil {
		t.Fatal(err)
	}
	_ = setup.Close(ctx)
	if dead := waitDead(ctx, t, conn, func(n int64) bool { return n == 3000 }); dead != 3000 {
		t.Fatalf("%d dead versions after 3,000 updates", dead)
	}
	v := &vacuumer{}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { v.run(rctx, url, 20*time.Millisecond); close(done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v.mu.Lock()
		runs, verr := v.runs, v.err
		v.mu.Unlock()
		if verr != nil {
			t.Fatalf("vacuum: %v", verr)
		}
		if runs >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d vacuum runs in 30 s", runs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	<-done
	if dead := waitDead(ctx, t, conn, func(n int64) bool { return n == 0 }); dead != 0 {
		t.Fatalf("%d dead versions left after the vacuum runs", dead)
	}
	if s := v.String(); !strings.Contains(s, "ran ") || strings.Contains(s, "error") {
		t.Fatalf("report line %q", s)
	}
}

// waitDead reads table t's count of dead versions until ok accepts it or 5 s
// pass (statistics arrive a moment after the session that made them) and
// returns the last one read.
func waitDead(ctx context.Context, t *testing.T, conn *pgx.Conn, ok func(int64) bool) int64 {
	t.Helper()
	var dead int64
	for range 50 {
		if _, err := conn.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(ctx, `SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 't'`).Scan(&dead); err != nil {
			t.Fatal(err)
		}
		if ok(dead) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return dead
}
