// Package postgres opens the pgx pool of a service, applies its embedded,
// numbered migrations to the service's own schema, runs transactions and maps
// database errors to application errors.
//
// Least privilege: a service runs as its own role (the user of Options.URL),
// which may read and write the tables of its own schema and nothing else. The
// migrations are applied over a separate owner connection (Options.MigrateURL),
// which then grants the runtime role exactly those rights; see Setup.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/telemetry"
)

// Options for Open and Setup.
type Options struct {
	// URL is the runtime connection, as the service's own role.
	URL string
	// MigrateURL is the connection of the schema owner (or an administrator)
	// that applies Migrations and grants URL's role its rights. Empty: URL
	// itself migrates (the runtime role then owns the schema and needs no
	// grants).
	MigrateURL string
	Schema     string // the service's own schema; also its search_path
	// Migrations holds files named NNN_description.sql at its root.
	Migrations fs.FS
	MaxConns   int32
	// Pooler is what URL reaches (DATABASE_POOLER); "" is PoolerNone.
	Pooler Pooler
}

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Open migrates (Setup, when Options.Migrations is set), then connects as
// the runtime role and returns the pool.
func Open(ctx context.Context, o Options, log *slog.Logger) (*pgxpool.Pool, error) {
	if !schemaName.MatchString(o.Schema) {
		return nil, fmt.Errorf("postgres: invalid schema name %q", o.Schema)
	}
	if o.Migrations != nil {
		if err := Setup(ctx, o, log); err != nil {
			return nil, err
		}
	}
	cfg, err := poolConfig(o)
	if err != nil {
		return nil, err
	}
	// Queries made for a traced request or message become its child
	// spans (the SQL text, never the arguments); others are not traced.
	if telemetry.Recording() {
		cfg.ConnConfig.Tracer = otelpgx.NewTracer()
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	failFast(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: ping: %w", err)
	}
	if o.pooler() == PoolerTransaction {
		if err := checkSchema(ctx, pool, o.Schema, cfg.ConnConfig.User, cfg.ConnConfig.Database); err != nil {
			pool.Close()
			return nil, err
		}
	}
	return pool, nil
}

// Setup applies the pending migrations over MigrateURL (URL when empty) and,
// in the same transaction, gives the runtime role (the user of URL) its
// rights: USAGE on the schema, SELECT/INSERT/UPDATE/DELETE on its tables
// (SELECT only on schema_migrations), USAGE/SELECT on its sequences, and the
// same by default on what later migrations create. Nothing on other schemas.
//
// A runtime role that does not exist is created with LOGIN (and the password
// of URL, if any): that is the development set-up. Production creates the
// role beforehand with its own password, and Setup then only grants. Nothing
// is granted when the runtime role is the migrating user, a superuser or the
// schema's owner. Setup leaves no connection open: the `migrate` subcommand
// calls it alone.
func Setup(ctx context.Context, o Options, log *slog.Logger) error {
	if !schemaName.MatchString(o.Schema) {
		return fmt.Errorf("postgres: invalid schema name %q", o.Schema)
	}
	runtime, err := pgx.ParseConfig(o.URL)
	if err != nil {
		return fmt.Errorf("postgres: parse url: %w", err)
	}
	migrateURL := o.MigrateURL
	if migrateURL == "" {
		migrateURL = o.URL
		// A service that runs with its own role only (production, after
		// `<service> migrate` ran as the owner) has no right to create
		// anything: when nothing is pending there is nothing to do.
		if done, err := upToDate(ctx, o.URL, o.pooler(), o.Schema, o.Migrations); err != nil {
			return err
		} else if done {
			return nil
		}
	}
	// DATABASE_MIGRATE_URL reaches PostgreSQL directly; URL migrating
	// itself may go through the pooler.
	pooler := PoolerNone
	if o.MigrateURL == "" {
		pooler = o.pooler()
	}
	conn, err := connectPlain(ctx, migrateURL, pooler)
	if err != nil {
		return fmt.Errorf("postgres: connect to migrate: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	n, err := migrate(ctx, conn, o.Schema, o.Migrations, grantee{role: runtime.User, password: runtime.Password})
	if err != nil {
		return err
	}
	if n > 0 {
		log.Info("migrations applied", "schema", o.Schema, "count", n)
	}
	return nil
}

// upToDate reports whether every migration is recorded in the schema's
// schema_migrations, reading it as the user of url.
func upToDate(ctx context.Context, url string, p Pooler, schema string, fsys fs.FS) (bool, error) {
	ms, err := readMigrations(fsys)
	if err != nil {
		return false, err
	}
	conn, err := connectPlain(ctx, url, p)
	if err != nil {
		return false, fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, pgx.Identifier{schema, "schema_migrations"}.Sanitize()).Scan(&exists); err != nil {
		return false, fmt.Errorf("postgres: read migrations: %w", err)
	}
	if !exists {
		return false, nil
	}
	rows, err := conn.Query(ctx, "SELECT version FROM "+pgx.Identifier{schema}.Sanitize()+".schema_migrations")
	if err != nil {
		return false, fmt.Errorf("postgres: read migrations: %w", err)
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return false, fmt.Errorf("postgres: read migrations: %w", err)
	}
	applied := map[int]bool{}
	for _, v := range vs {
		applied[v] = true
	}
	for _, m := range ms {
		if !applied[m.version] {
			return false, nil
		}
	}
	return true, nil
}

// connectPlain connects to url for statements that qualify their names
// (migrations, their bookkeeping), in an exec mode that works through the
// pooler p.
func connectPlain(ctx context.Context, url string, p Pooler) (*pgx.Conn, error) {
	cc, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	if p == PoolerTransaction {
		if err := connConfig(cc, "", p); err != nil {
			return nil, err
		}
	}
	return pgx.ConnectConfig(ctx, cc)
}

// grantee is the runtime role Setup grants rights to.
type grantee struct{ role, password string }

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
// lock, so several replicas starting at once apply them exactly once. It
// grants nothing: Setup does both.
func Migrate(ctx context.Context, db Beginner, schema string, fsys fs.FS) (int, error) {
	return migrate(ctx, db, schema, fsys, grantee{})
}

func migrate(ctx context.Context, db Beginner, schema string, fsys fs.FS, g grantee) (int, error) {
	var ms []migration
	if fsys != nil {
		var err error
		if ms, err = readMigrations(fsys); err != nil {
			return 0, err
		}
	}
	h := fnv.New64a()
	h.Write([]byte("migrate:" + schema))
	lockID := int64(h.Sum64())
	applied := 0
	err := InTx(ctx, db, func(tx pgx.Tx) error {
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
		if g.role == "" {
			return nil
		}
		return grantRuntime(ctx, tx, schema, g)
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: migrate %s: %w", schema, err)
	}
	return applied, nil
}

// grantRuntime gives g.role its rights on schema; it runs in the migration
// transaction, under its advisory lock, so replicas do not grant the same
// objects concurrently ("tuple concurrently updated").
func grantRuntime(ctx context.Context, tx pgx.Tx, schema string, g grantee) error {
	var me string
	if err := tx.QueryRow(ctx, "SELECT current_user").Scan(&me); err != nil {
		return err
	}
	if g.role != me {
		if err := ensureRole(ctx, tx, g); err != nil {
			return err
		}
	}
	var super, owner bool
	err := tx.QueryRow(ctx, `SELECT r.rolsuper, n.nspowner = r.oid
		FROM pg_roles r, pg_namespace n WHERE r.rolname = $1 AND n.nspname = $2`, g.role, schema).Scan(&super, &owner)
	if err != nil {
		return fmt.Errorf("role %s: %w", g.role, err)
	}
	if super {
		// A superuser may serve several schemas; it keeps its own path.
		return nil
	}
	if _, err := roleSearchPath(ctx, tx, schema, g.role); err != nil {
		return err
	}
	if g.role == me || owner {
		return nil
	}
	s, r := pgx.Identifier{schema}.Sanitize(), pgx.Identifier{g.role}.Sanitize()
	for _, stmt := range []string{
		"GRANT USAGE ON SCHEMA " + s + " TO " + r,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA " + s + " TO " + r,
		// The migration record is the owner's: the service may read it only.
		"REVOKE INSERT, UPDATE, DELETE ON " + s + ".schema_migrations FROM " + r,
		"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA " + s + " TO " + r,
		"ALTER DEFAULT PRIVILEGES IN SCHEMA " + s + " GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO " + r,
		"ALTER DEFAULT PRIVILEGES IN SCHEMA " + s + " GRANT USAGE, SELECT ON SEQUENCES TO " + r,
	} {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("grant %s: %w", g.role, err)
		}
	}
	return nil
}

// ensureRole creates g.role with LOGIN when it does not exist. Roles are
// cluster-wide and many databases (tests, replicas) may create the same one
// at once: losing that race (duplicate_object, or unique_violation on
// pg_authid) is success. A savepoint keeps the migration transaction usable.
func ensureRole(ctx context.Context, tx pgx.Tx, g grantee) error {
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", g.role).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	var stmt string
	err := tx.QueryRow(ctx, `SELECT CASE WHEN $2 = '' THEN format('CREATE ROLE %I LOGIN', $1::text)
		ELSE format('CREATE ROLE %I LOGIN PASSWORD %L', $1::text, $2::text) END`, g.role, g.password).Scan(&stmt)
	if err != nil {
		return err
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	if _, err := sp.Exec(ctx, stmt); err != nil {
		_ = sp.Rollback(ctx)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && (pe.Code == "42710" || pe.Code == "23505") {
			return nil
		}
		return fmt.Errorf("create role %s: %w", g.role, err)
	}
	return sp.Commit(ctx)
}

// Beginner is what InTx needs: a pool or a connection.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// InTx runs fn in a transaction, committing when it returns nil. An outage
// met anywhere in it (its BEGIN, a statement of fn however fn wrapped it, its
// COMMIT) comes back as Outage's 503, so a caller returning InTx's error as
// it is never answers 500 for one; any other error is left to the caller as
// it was.
func InTx(ctx context.Context, db Beginner, fn func(tx pgx.Tx) error) (err error) {
	defer func() {
		if o := Outage(err); o != nil {
			err = o
		}
	}()
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

// DefaultConnectTimeout bounds a new connection when the URL sets no
// connect_timeout: while the server is down or restarting, a request that
// needs a connection fails within it (503) instead of hanging.
const DefaultConnectTimeout = 3 * time.Second

// failFast tunes the pool for outages: new connections give up after
// DefaultConnectTimeout, and connections idle for a moment are pinged before
// use (pgxpool's default ShouldPing after 1 s idle), so that after a
// restart the dead ones are replaced rather than handed to a request. A
// connection that fails under a request is closed by pgx and leaves the
// pool: the pool heals by itself once the server is back.
func failFast(cfg *pgxpool.Config) {
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	// Closed connections are replaced in the background too, not only
	// when a request asks for one.
	cfg.HealthCheckPeriod = 5 * time.Second
}

// unavailableCode reports the server's errors that say nothing about the
// statement: the server is shutting down or starting, or out of
// connections (SQLSTATE classes 08 and 57P, and 53300).
func unavailableCode(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"): // connection exception
		return true
	case code == "57P01", code == "57P02", code == "57P03", code == "57P05": // admin/crash shutdown, cannot connect now, idle session timeout
		return true
	case code == "53300": // too many connections
		return true
	}
	return false
}

// Outage is the one rule that decides that an error is an outage (503):
// the database could not be reached or dropped the connection (refused,
// reset, closed, timed out, shutting down, starting up: a failure of the
// infrastructure, not of the statement, which the client may retry once
// the database is back; Retry-After 1 s), or the caller's own context ended
// (cancelled or past its deadline). It returns the application error such
// an error becomes, and nil for any other error and for one a layer already
// mapped to an application error (which keeps its mapping).
//
// Error, InTx and the HTTP layer (httpserver.Options.Outage, which boot
// sets to Outage for errors a handler returns unmapped) all ask it, so an
// outage answers the same 503 wherever it was met.
func Outage(err error) *apperr.Error {
	if err == nil {
		return nil
	}
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return apperr.Wrap(apperr.Unavailable, err, "the request was cancelled or timed out")
	}
	if unreachable(err) {
		return &apperr.Error{Code: apperr.Unavailable, Err: err, RetryAfterSeconds: 1,
			Message: "the database is temporarily unavailable; try again later"}
	}
	return nil
}

// unreachable is Outage's test of the driver's and the network's errors.
func unreachable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return unavailableCode(pe.Code)
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	if pgconn.Timeout(err) {
		return true
	}
	// Nothing reached the server (the connection was closed or failed
	// before the statement was sent): pgx says it is safe to retry.
	if pgconn.SafeToRetry(err) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed)
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
	if o := Outage(err); o != nil {
		return o
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

// Querier is what list helpers need: a pool or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Page runs a count and a page query with the same filter arguments:
// countSQL counts the rows that pageSQL pages through. The page query gets
// LIMIT and OFFSET as its last two parameters. what names the records in
// errors.
//
// When pageSQL is a plain "SELECT <columns> ..." (whose ORDER BY names
// columns, not positions), both go to the server as one statement, the
// count as a scalar subquery in the page's select list: one round trip and
// one statement to bind and execute instead of two, and the total and the
// items from one snapshot. An empty first page means a total of 0; only a
// page beyond the last has its count run on its own.
func Page[T any](ctx context.Context, q Querier, what, countSQL, pageSQL string, scan func(pgx.Row) (T, error), p paging.Page, args ...any) ([]T, int, error) {
	pageArgs := append(args[:len(args):len(args)], p.Size, p.Offset())
	cols, combined := strings.CutPrefix(pageSQL, "SELECT ")
	combined = combined && !strings.HasPrefix(strings.ToUpper(strings.TrimSpace(cols)), "DISTINCT")
	if combined {
		var total int
		tr := &totalRow{total: &total}
		items, err := collect(ctx, q, what, "SELECT ("+countSQL+"), "+cols, func(row pgx.Row) (T, error) {
			tr.Row = row
			return scan(tr)
		}, p.Size, pageArgs...)
		if err != nil || len(items) > 0 || p.Offset() == 0 {
			return items, total, err
		}
	}
	var total int
	if err := q.QueryRow(ctx, countSQL, args...).Scan(&total); err != nil {
		return nil, 0, Error(err, what)
	}
	if combined || total == 0 || p.Offset() >= total {
		return nil, total, nil
	}
	items, err := collect(ctx, q, what, pageSQL, scan, p.Size, pageArgs...)
	return items, total, err
}

// totalRow is a row of Page's combined statement: its first column, the
// total, goes to total and the others to the caller's scan. One serves
// every row of a page (dests is reused).
type totalRow struct {
	pgx.Row
	total *int
	dests []any
}

func (r *totalRow) Scan(dest ...any) error {
	r.dests = append(append(r.dests[:0], r.total), dest...)
	return r.Row.Scan(r.dests...)
}

// Collect scans every row of a query.
func Collect[T any](ctx context.Context, q Querier, what, sql string, scan func(pgx.Row) (T, error), args ...any) ([]T, error) {
	return collect(ctx, q, what, sql, scan, 0, args...)
}

// collect is Collect into a slice made for size rows (a page's).
func collect[T any](ctx context.Context, q Querier, what, sql string, scan func(pgx.Row) (T, error), size int, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, Error(err, what)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		it, err := scan(rows)
		if err != nil {
			return nil, Error(err, what)
		}
		if out == nil {
			out = make([]T, 0, max(size, 1))
		}
		out = append(out, it)
	}
	return out, Error(rows.Err(), what)
}
