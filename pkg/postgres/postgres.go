// Package postgres opens the pgx pool of a service, applies its embedded,
// numbered migrations to the service's own schema, runs transactions and maps
// database errors to application errors.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/apperr"
)

// Options for Open.
type Options struct {
	URL    string
	Schema string // the service's own schema; also its search_path
	// Migrations holds files named NNN_description.sql at its root.
	Migrations fs.FS
	MaxConns   int32
}

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Open connects, migrates and returns the pool.
func Open(ctx context.Context, o Options, log *slog.Logger) (*pgxpool.Pool, error) {
	if !schemaName.MatchString(o.Schema) {
		return nil, fmt.Errorf("postgres: invalid schema name %q", o.Schema)
	}
	cfg, err := pgxpool.ParseConfig(o.URL)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse url: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = o.Schema
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: ping: %w", err)
	}
	if o.Migrations != nil {
		n, err := Migrate(ctx, pool, o.Schema, o.Migrations)
		if err != nil {
			pool.Close()
			return nil, err
		}
		if n > 0 {
			log.Info("migrations applied", "schema", o.Schema, "count", n)
		}
	}
	return pool, nil
}

type migration struct {
	version int
	name    string
	sql     string
}

func readMigrations(fsys fs.FS) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("postgres: read migrations: %w", err)
	}
	var out []migration
	seen := map[int]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("postgres: migration %q must be named NNN_description.sql", e.Name())
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("postgres: migrations %q and %q share version %d", prev, e.Name(), v)
		}
		seen[v] = e.Name()
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// Migrate applies the pending migrations in one transaction under an advisory
// lock, so several replicas starting at once apply them exactly once.
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema string, fsys fs.FS) (int, error) {
	ms, err := readMigrations(fsys)
	if err != nil {
		return 0, err
	}
	h := fnv.New64a()
	h.Write([]byte("migrate:" + schema))
	lockID := int64(h.Sum64())
	applied := 0
	err = InTx(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockID); err != nil {
			return err
		}
		ident := pgx.Identifier{schema}.Sanitize()
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+ident); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+ident+`.schema_migrations (
			version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		done := map[int]bool{}
		rows, err := tx.Query(ctx, "SELECT version FROM "+ident+".schema_migrations")
		if err != nil {
			return err
		}
		vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return err
		}
		for _, v := range vs {
			done[v] = true
		}
		if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+ident); err != nil {
			return err
		}
		for _, m := range ms {
			if done[m.version] {
				continue
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO "+ident+".schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
				return err
			}
			applied++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: migrate %s: %w", schema, err)
	}
	return applied, nil
}

// Beginner is what InTx needs: a pool or a connection.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// InTx runs fn in a transaction, committing when it returns nil.
func InTx(ctx context.Context, db Beginner, fn func(tx pgx.Tx) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// Error maps a database error to an application error. what names the record
// ("topic") for not-found messages. Errors that are already application errors
// pass through.
func Error(err error, what string) error {
	if err == nil {
		return nil
	}
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return apperr.E(apperr.NotFound, "%s not found", what)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return apperr.Wrap(apperr.Unavailable, err, "the request was cancelled or timed out")
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505":
			return apperr.Wrap(apperr.Conflict, err, "a %s with these values already exists", what)
		case "23503":
			return apperr.Wrap(apperr.Invalid, err, "the %s refers to a record that does not exist", what)
		case "23514", "22001", "22003", "22P02", "23502":
			return apperr.Wrap(apperr.Invalid, err, "the %s has an invalid value", what)
		case "40P01", "40001":
			// A deadlock or serialization failure: nothing is wrong with the
			// request, it lost a race and can simply be sent again.
			return apperr.Wrap(apperr.Conflict, err, "the %s was changed concurrently; retry the request", what)
		}
	}
	return apperr.Wrap(apperr.Internal, err, "")
}

// UniqueViolation reports whether err is a unique violation on constraint
// (any constraint when constraint is "").
func UniqueViolation(err error, constraint string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && (constraint == "" || pe.ConstraintName == constraint)
}
