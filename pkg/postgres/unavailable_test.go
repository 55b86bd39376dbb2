package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/pkg/tcptest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/postgres/pgtest"
)

func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func connectErr(t *testing.T, addr, params string) (time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	start := time.Now()
	conn, err := pgx.Connect(ctx, "postgres://postgres@"+addr+"/postgres?sslmode=disable"+params)
	if err == nil {
		conn.Close(ctx)
		t.Fatalf("connected to %s", addr)
	}
	return time.Since(start), err
}

// The errors of a database that cannot be reached or drops the connection,
// each produced for real (a closed port, a server that hangs up or hangs, a
// server starting up, a terminated session, a closed connection), are
// Unavailable (503) with a message that says nothing about the internals;
// statement errors keep their own codes.
func TestUnavailableErrors(t *testing.T) {
	ctx := t.Context()
	url := pgtest.NewDatabase(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	pool, err := postgres.Open(ctx, postgres.Options{URL: url, Schema: "svc", Migrations: os.DirFS("testdata/m1")}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	_, refused := connectErr(t, closedPort(t), "")
	_, hangUp := connectErr(t, tcptest.Serve(t, func(c net.Conn) { c.Close() }), "")
	took, hang := connectErr(t, tcptest.Serve(t, func(c net.Conn) {
		time.Sleep(5 * time.Second)
		c.Close()
	}), "&connect_timeout=1")
	if took > 3*time.Second {
		t.Errorf("connect_timeout=1 took %s", took)
	}
	_, startingUp := connectErr(t, tcptest.Serve(t, func(c net.Conn) {
		defer c.Close()
		be := pgproto3.NewBackend(c, c)
		if _, err := be.ReceiveStartupMessage(); err != nil {
			return
		}
		be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: "57P03", Message: "the database system is starting up"})
		_ = be.Flush()
	}), "")

	// A session the server ends (as a shutdown does: 57P01).
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var pid int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	_, terminated := conn.Exec(ctx, "SELECT 1")
	_, closed := conn.Exec(ctx, "SELECT 1")

	sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, slow := pool.Exec(sctx, "SELECT pg_sleep(2)")
	cancel()

	_, dup := pool.Exec(ctx, "INSERT INTO things (name) VALUES ('x'), ('x')")
	_, syntax := pool.Exec(ctx, "SELEC 1")
	noRows := pool.QueryRow(ctx, "SELECT name FROM things WHERE false").Scan(new(string))

	for _, c := range []struct {
		name string
		err  error
		want apperr.Code
	}{
		{"connection refused", refused, apperr.Unavailable},
		{"server hangs up at start", hangUp, apperr.Unavailable},
		{"server does not answer (connect_timeout)", hang, apperr.Unavailable},
		{"server starting up (57P03)", startingUp, apperr.Unavailable},
		{"session terminated (57P01)", terminated, apperr.Unavailable},
		{"connection closed", closed, apperr.Unavailable},
		{"statement past its deadline", slow, apperr.Unavailable},
		{"unique violation", dup, apperr.Conflict},
		{"syntax error", syntax, apperr.Internal},
		{"no rows", noRows, apperr.NotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.err == nil {
				t.Fatal("no error was produced")
			}
			got := postgres.Error(c.err, "thing")
			if code := apperr.CodeOf(got); code != c.want {
				t.Fatalf("%v: code %s, want %s", c.err, code, c.want)
			}
			// Error's 503 is Outage's, the one rule: the same answer
			// wherever the error is met.
			if o := postgres.Outage(c.err); (o != nil) != (c.want == apperr.Unavailable) {
				t.Fatalf("Outage(%v) = %v", c.err, o)
			} else if o != nil && !sameError(got, o) {
				t.Fatalf("Error gave %#v, Outage %#v", got, o)
			}
			// A database that went away (not the caller's own deadline)
			// says when to try again.
			if c.want == apperr.Unavailable && !errors.Is(c.err, context.DeadlineExceeded) {
				if ae := postgres.Outage(c.err); ae.RetryAfterSeconds != 1 {
					t.Fatalf("%v: Retry-After %d, want 1", c.err, ae.RetryAfterSeconds)
				}
			}
			var ae *apperr.Error
			if errors.As(got, &ae) && c.want == apperr.Unavailable {
				for _, leak := range []string{"dial", "tcp", "pgx", "pgconn", "127.0.0.1", "57P", "EOF"} {
					if strings.Contains(ae.Message, leak) {
						t.Fatalf("client message %q shows %q", ae.Message, leak)
					}
				}
			}
		})
	}
}

// When every session of a pool is ended under it (as a database restart
// does), the requests that meet a dead connection fail as Unavailable and
// the pool heals by itself: soon every query succeeds again.
func TestPoolHealsAfterItsSessionsEnd(t *testing.T) {
	ctx := t.Context()
	url := pgtest.NewDatabase(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	pool, err := postgres.Open(ctx, postgres.Options{URL: url, Schema: "svc", Migrations: os.DirFS("testdata/m1"), MaxConns: 4}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// Fill the pool with busy connections.
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			_, _ = pool.Exec(ctx, "SELECT pg_sleep(0.2)")
		}()
	}
	for range 4 {
		<-done
	}
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var ended int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&ended); err != nil {
		t.Fatal(err)
	}
	if ended == 0 {
		t.Fatal("no pool session to end")
	}
	failures, successes := 0, 0
	deadline := time.Now().Add(10 * time.Second)
	for successes < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("the pool did not heal: %d failures, %d successes", failures, successes)
		}
		// No pause: busy connections are not pinged before use, so the
		// dead ones reach queries.
		_, err := pool.Exec(ctx, "SELECT 1")
		switch {
		case err == nil:
			successes++
		case apperr.Is(postgres.Error(err, "thing"), apperr.Unavailable):
			failures++
			successes = 0
		default:
			t.Fatalf("a dead connection gave %v (%s), not Unavailable", err, apperr.CodeOf(postgres.Error(err, "thing")))
		}
	}
	t.Logf("%d sessions ended; %d queries failed as Unavailable before the pool healed", ended, failures)
}

// A transaction whose BEGIN meets a session the server terminated (as a
// shutting-down server does, SQLSTATE 57P01) fails as Unavailable from InTx
// itself: a caller that returns InTx's error unmapped answers 503, not 500.
// fn never runs.
func TestInTxOnATerminatedSessionIsUnavailable(t *testing.T) {
	ctx := t.Context()
	url := pgtest.NewDatabase(t)
	admin := connect(t, url)
	conn := connect(t, url)
	terminate(t, admin, conn)
	ran := false
	err := postgres.InTx(ctx, conn, func(pgx.Tx) error { ran = true; return nil })
	if ran {
		t.Fatal("fn ran on a terminated session")
	}
	if !apperr.Is(err, apperr.Unavailable) {
		t.Fatalf("InTx on a terminated session: %v (%s), want Unavailable", err, apperr.CodeOf(err))
	}
	wantOutage(t, "BEGIN on a terminated session", err)
	// A statement of fn that meets the terminated session, wrapped by fn as
	// the outbox wraps its insert, is Unavailable too.
	conn = connect(t, url)
	err = postgres.InTx(ctx, conn, func(tx pgx.Tx) error {
		terminate(t, admin, conn)
		if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
			return fmt.Errorf("outbox: add events.x: %w", err)
		}
		return nil
	})
	if !apperr.Is(err, apperr.Unavailable) {
		t.Fatalf("a statement on a terminated session inside InTx: %v (%s), want Unavailable", err, apperr.CodeOf(err))
	}
	wantOutage(t, "a statement on a terminated session", err)
	// So is a COMMIT that meets it.
	conn = connect(t, url)
	err = postgres.InTx(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
			return err
		}
		terminate(t, admin, conn)
		return nil
	})
	wantOutage(t, "COMMIT on a terminated session", err)
	// An error fn mapped already keeps its mapping, even when it wraps an
	// outage.
	conn = connect(t, url)
	terminate(t, admin, conn)
	mapped := apperr.Wrap(apperr.Conflict, nil, "mapped")
	err = postgres.InTx(ctx, connect(t, url), func(tx pgx.Tx) error {
		_, err := conn.Exec(ctx, `SELECT 1`)
		mapped.Err = err
		return mapped
	})
	if mapped.Err == nil || err != error(mapped) {
		t.Fatalf("a mapped error came back as %v, want it as fn returned it (cause %v)", err, mapped.Err)
	}
	// A statement error inside fn is left to the caller, as it was.
	err = postgres.InTx(ctx, connect(t, url), func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT 1/0`)
		return err
	})
	var ae *apperr.Error
	if err == nil || errors.As(err, &ae) {
		t.Fatalf("a statement error came back as %v, want the driver's error untouched", err)
	}
}

// connect opens a connection to url, closed when the test ends.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// terminate ends conn's session from admin's, as a server shutting down
// does (SQLSTATE 57P01), and waits until it has ended.
func terminate(t *testing.T, admin, conn *pgx.Conn) {
	t.Helper()
	var ended bool
	if err := admin.QueryRow(t.Context(), `SELECT pg_terminate_backend($1, 5000)`, conn.PgConn().PID()).Scan(&ended); err != nil || !ended {
		t.Fatalf("terminate: %v %v", ended, err)
	}
}

// wantOutage checks that err is the 503 of a database gone away: Unavailable
// with Retry-After 1 and the one message of postgres.Outage.
func wantOutage(t *testing.T, what string, err error) {
	t.Helper()
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code != apperr.Unavailable || ae.RetryAfterSeconds != 1 {
		t.Fatalf("%s: %#v, want Unavailable with Retry-After 1", what, err)
	}
	if o := postgres.Outage(ae.Err); o == nil || !sameError(ae, o) {
		t.Fatalf("%s: %#v is not Outage's answer %#v", what, ae, o)
	}
}

// sameError reports whether two application errors answer the same
// (code, message, Retry-After).
func sameError(a error, b *apperr.Error) bool {
	var ae *apperr.Error
	return errors.As(a, &ae) && ae.Code == b.Code && ae.Message == b.Message &&
		ae.RetryAfterSeconds == b.RetryAfterSeconds && len(ae.Fields) == 0
}
