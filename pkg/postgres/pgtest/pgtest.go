// Package pgtest gives each test its own PostgreSQL database on the local
// server and drops it afterwards; it never touches other databases.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"supportplatform.dev/pkg/postgres"
)

// AdminURL is where databases are created: TEST_DATABASE_URL or the local
// trust-auth server.
func AdminURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// NewDatabase creates a uniquely named database and returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	u, err := CreateDatabase(context.Background(), "t")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := DropDatabase(context.Background(), u); err != nil {
			t.Logf("pgtest: drop: %v", err)
		}
	})
	return u
}

// NewSchema is a fresh database with schema migrated (pkg/postgres.Open):
// the pool a store test works on, closed when the test ends.
func NewSchema(t testing.TB, schema string, migrations fs.FS) *pgxpool.Pool {
	t.Helper()
	pool, err := postgres.Open(context.Background(), postgres.Options{URL: NewDatabase(t), Schema: schema, Migrations: migrations},
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// CreateDatabase makes prefix_<random> and returns its URL.
func CreateDatabase(ctx context.Context, prefix string) (string, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := prefix + "_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	u, err := url.Parse(AdminURL())
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// DropDatabase drops the database named in dbURL, closing its connections.
func DropDatabase(ctx context.Context, dbURL string) error {
	u, err := url.Parse(dbURL)
	if err != nil {
		return err
	}
	name := u.Path[1:]
	conn, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}

// NewRole returns a unique role name for a test to give to postgres.Setup
// (which creates it) and drops the role when the test ends. Roles are
// cluster-wide: call NewRole before NewDatabase, so that the cleanups run in
// the right order (the databases holding the role's grants go first).
// Only this test's own roles are ever dropped.
func NewRole(t testing.TB) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "t_role_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, AdminURL())
		if err != nil {
			t.Logf("pgtest: drop role: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
			t.Logf("pgtest: drop role %s: %v", name, err)
		}
	})
	return name
}

// URLAs is dbURL with user (and no password) instead of its own.
func URLAs(dbURL, user string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return dbURL
	}
	u.User = url.User(user)
	return u.String()
}
