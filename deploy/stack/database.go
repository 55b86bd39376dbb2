package stack

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"supportplatform.dev/pkg/randid"
)

// TestDatabasePrefix starts the name of every database CreateDatabase makes;
// DropDatabase refuses any other name so a test can never drop real data.
const TestDatabasePrefix = "sp_e2e_"

var databaseName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// CreateDatabase creates a fresh, uniquely named database on the local
// PostgreSQL and returns its name.
func CreateDatabase(ctx context.Context) (string, error) {
	return LocalInfra(nil).CreateDatabase(ctx)
}

// DropDatabase drops a database made by CreateDatabase.
func DropDatabase(ctx context.Context, name string) error {
	return LocalInfra(nil).DropDatabase(ctx, name)
}

// EnsureDatabase creates the database name on the local PostgreSQL unless it
// exists.
func EnsureDatabase(ctx context.Context, name string) error {
	return LocalInfra(nil).EnsureDatabase(ctx, name)
}

// CreateDatabase creates a fresh, uniquely named database and returns its name.
func (in Infra) CreateDatabase(ctx context.Context) (string, error) {
	name := TestDatabasePrefix + randid.Hex(6)
	if err := in.admin(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return name, nil
}

// DropDatabase drops a database made by CreateDatabase, closing the
// connections still open to it. Names without TestDatabasePrefix are refused.
func (in Infra) DropDatabase(ctx context.Context, name string) error {
	if !strings.HasPrefix(name, TestDatabasePrefix) || !databaseName.MatchString(name) {
		return fmt.Errorf("refusing to drop database %q: not made by CreateDatabase", name)
	}
	return in.admin(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

// EnsureDatabase creates the database name unless it exists.
func (in Infra) EnsureDatabase(ctx context.Context, name string) error {
	if !databaseName.MatchString(name) {
		return fmt.Errorf("invalid database name %q", name)
	}
	conn, err := pgx.Connect(ctx, in.PostgresURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return err
}

// DatabaseExists reports whether the database name exists.
func (in Infra) DatabaseExists(ctx context.Context, name string) (bool, error) {
	conn, err := pgx.Connect(ctx, in.PostgresURL)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	err = conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists)
	return exists, err
}

func (in Infra) admin(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, in.PostgresURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

func replaceDatabase(rawURL, name string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	u.Path = "/" + name
	return u.String()
}

// replaceUser is rawURL connecting as user, without a password: the local
// server trusts loopback connections (see trustLoopback); elsewhere the role
// has a password the deployment sets.
func replaceUser(rawURL, user string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	u.User = url.User(user)
	return u.String()
}
