package boot

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/fstest"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/config"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/postgres/pgtest"
)

// A database outage met anywhere (a store method that maps its error, an
// InTx's BEGIN, statement or COMMIT, an error a handler returns unmapped,
// a pool whose server refuses connections) answers the same 503 through
// the server boot builds: Retry-After 1 and postgres.Outage's detail, the
// one rule. The errors are real: sessions ended by pg_terminate_backend
// (as a shutting-down server ends them) and a closed port. Errors that are
// no outage keep their answers.
func TestDatabaseOutageIsOne503Everywhere(t *testing.T) {
	ctx := t.Context()
	dbURL, natsURL := pgtest.NewDatabase(t), natstest.Start(t)
	var cfg config.Common
	env := map[string]string{"DATABASE_URL": dbURL, "NATS_URL": natsURL}
	if err := config.Load(func(k string) string { return env[k] }, &cfg); err != nil {
		t.Fatal(err)
	}
	d, err := Open(ctx, cfg, Options{Service: "outagetest", Schema: "outagetest",
		Migrations: fstest.MapFS{"001_init.sql": {Data: []byte("CREATE TABLE t (id int PRIMARY KEY);")}}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })

	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	// The handlers run on the subtests' goroutines: they note a failure
	// of the set-up in setupErr (checked after each request) instead of
	// ending the test.
	var setupErr error
	kill := func(conn *pgx.Conn) {
		var ended bool
		err := admin.QueryRow(context.WithoutCancel(ctx), `SELECT pg_terminate_backend($1, 5000)`, conn.PgConn().PID()).Scan(&ended)
		if err == nil && !ended {
			err = errors.New("the session did not end")
		}
		setupErr = cmp.Or(setupErr, err)
	}
	// dead is a connection whose session the server has ended.
	var conns []*pgx.Conn
	fresh := func() *pgx.Conn {
		conn, err := pgx.Connect(context.WithoutCancel(ctx), dbURL)
		if err != nil {
			setupErr = cmp.Or(setupErr, err)
			return nil
		}
		conns = append(conns, conn)
		return conn
	}
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close(context.Background())
		}
	})
	dead := func() *pgx.Conn {
		conn := fresh()
		if conn != nil {
			kill(conn)
		}
		return conn
	}
	// A pool whose server refuses connections (nothing listens).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusing, err := pgxpool.New(ctx, "postgres://postgres@"+l.Addr().String()+"/x?sslmode=disable&connect_timeout=2")
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(refusing.Close)

	routes := map[string]func(ctx context.Context) error{
		// Outages.
		"store": func(ctx context.Context) error {
			_, err := dead().Exec(ctx, "SELECT 1")
			return postgres.Error(err, "thing")
		},
		"store-list": func(ctx context.Context) error {
			_, err := postgres.Collect(ctx, refusing, "things", "SELECT id FROM t", func(r pgx.Row) (int, error) {
				var id int
				return id, r.Scan(&id)
			})
			return err
		},
		"begin": func(ctx context.Context) error {
			return postgres.InTx(ctx, dead(), func(pgx.Tx) error { return nil })
		},
		"statement": func(ctx context.Context) error {
			conn := fresh()
			return postgres.InTx(ctx, conn, func(tx pgx.Tx) error {
				kill(conn)
				if _, err := tx.Exec(ctx, "INSERT INTO t VALUES (1)"); err != nil {
					return fmt.Errorf("outbox: add events.x: %w", err)
				}
				return nil
			})
		},
		"commit": func(ctx context.Context) error {
			conn := fresh()
			return postgres.InTx(ctx, conn, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, "SELECT 1"); err != nil {
					return err
				}
				kill(conn)
				return nil
			})
		},
		"unmapped": func(ctx context.Context) error {
			_, err := dead().Exec(ctx, "SELECT 1")
			return fmt.Errorf("store: count things: %w", err)
		},
		"unmapped-closed": func(ctx context.Context) error {
			conn := dead()
			_, _ = conn.Exec(ctx, "SELECT 1")
			_, err := conn.Exec(ctx, "SELECT 1")
			return fmt.Errorf("store: count things: %w", err)
		},
		"unmapped-refused": func(ctx context.Context) error {
			_, err := refusing.Exec(ctx, "SELECT 1")
			return err
		},
		// No outages.
		"conflict": func(ctx context.Context) error {
			_, err := d.DB.Exec(ctx, "INSERT INTO t VALUES (7), (7)")
			return postgres.Error(err, "thing")
		},
		"mapped-outage": func(ctx context.Context) error {
			_, err := dead().Exec(ctx, "SELECT 1")
			return apperr.Wrap(apperr.Conflict, err, "the thing was changed concurrently")
		},
		"statement-error": func(ctx context.Context) error {
			_, err := d.DB.Exec(ctx, "SELECT 1/0")
			return fmt.Errorf("store: %w", err)
		},
	}
	for name, fn := range routes {
		d.Server.Engine.GET("/api/Outage/"+name, d.Server.Handle(func(c *gin.Context) error { return fn(c.Request.Context()) }))
	}

	// The detail of a database that went away, as the one rule words it.
	want := postgres.Outage(io.ErrUnexpectedEOF)
	if want == nil || want.Code != apperr.Unavailable {
		t.Fatalf("Outage(unexpected EOF) = %v", want)
	}
	for _, c := range []struct {
		route  string
		status int
		retry  string
	}{
		{"store", http.StatusServiceUnavailable, "1"},
		{"store-list", http.StatusServiceUnavailable, "1"},
		{"begin", http.StatusServiceUnavailable, "1"},
		{"statement", http.StatusServiceUnavailable, "1"},
		{"commit", http.StatusServiceUnavailable, "1"},
		{"unmapped", http.StatusServiceUnavailable, "1"},
		{"unmapped-closed", http.StatusServiceUnavailable, "1"},
		{"unmapped-refused", http.StatusServiceUnavailable, "1"},
		{"conflict", http.StatusConflict, ""},
		{"mapped-outage", http.StatusConflict, ""},
		{"statement-error", http.StatusInternalServerError, ""},
	} {
		t.Run(c.route, func(t *testing.T) {
			rec := httptest.NewRecorder()
			setupErr = nil
			d.Server.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/Outage/"+c.route, nil))
			if setupErr != nil {
				t.Fatalf("set-up: %v", setupErr)
			}
			var p httpserver.Problem
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || rec.Header().Get("Content-Type") != httpserver.ProblemContentType {
				t.Fatalf("%d %q: %s (%v)", rec.Code, rec.Header().Get("Content-Type"), rec.Body, err)
			}
			if rec.Code != c.status || p.Status != c.status || rec.Header().Get("Retry-After") != c.retry {
				t.Fatalf("%d (problem %d), Retry-After %q: %s; want %d, %q", rec.Code, p.Status, rec.Header().Get("Retry-After"), rec.Body, c.status, c.retry)
			}
			if c.status == http.StatusServiceUnavailable &&
				(p.Type != httpserver.ProblemTypeBase+string(apperr.Unavailable) || p.Detail != want.Message) {
				t.Fatalf("type %q, detail %q; want the one rule's %q", p.Type, p.Detail, want.Message)
			}
		})
	}
}
