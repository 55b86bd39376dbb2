package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Pooler says what the runtime connections (DATABASE_URL and
// DATABASE_SESSION_URL) reach: PostgreSQL itself, or a pooler (PgBouncer,
// CloudNativePG's Pooler) in transaction mode, where consecutive
// transactions of one client connection run on different server
// connections and nothing of a session survives a transaction.
type Pooler string

const (
	// PoolerNone: PostgreSQL directly (the default). The search_path is
	// sent in the startup packet, statements are prepared and cached per
	// connection (pgx's cache_statement).
	PoolerNone Pooler = "none"
	// PoolerTransaction: a transaction-mode pooler in front. Nothing is
	// kept in a session: no search_path in the startup packet (PgBouncer
	// refuses unknown startup parameters; the role's own setting, which
	// Setup writes, gives it), no named prepared statements (pgx's
	// cache_describe: one unnamed statement per execution, sent with its
	// Bind and Execute in one message sequence; only the descriptions are
	// cached on the client), and no LISTEN or session lock on DATABASE_URL.
	PoolerTransaction Pooler = "transaction"
)

// ParsePooler reads DATABASE_POOLER: "none" (or empty) or "transaction".
func ParsePooler(s string) (Pooler, error) {
	switch Pooler(s) {
	case "", PoolerNone:
		return PoolerNone, nil
	case PoolerTransaction:
		return PoolerTransaction, nil
	}
	return "", fmt.Errorf("config: DATABASE_POOLER %q: want none or transaction", s)
}

// SessionURL is the connection for what needs a session of its own (a
// LISTEN, session advisory locks): sessionURL when set, else url when it
// reaches PostgreSQL directly, else "" (there is none: a transaction-mode
// pooler has no sessions to give).
func SessionURL(url, sessionURL string, p Pooler) string {
	switch {
	case sessionURL != "":
		return sessionURL
	case p == PoolerTransaction:
		return ""
	}
	return url
}

// ErrNoSession is what needs a session gets when there is no session URL.
var ErrNoSession = errors.New("postgres: DATABASE_POOLER=transaction needs DATABASE_SESSION_URL (PostgreSQL directly, or a session-mode pooler) for session locks")

// connConfig applies the pooler's rules to a runtime connection's
// configuration: the search_path, and the query exec mode.
func connConfig(cc *pgx.ConnConfig, schema string, p Pooler) error {
	if p != PoolerTransaction {
		cc.RuntimeParams["search_path"] = schema
		return nil
	}
	delete(cc.RuntimeParams, "search_path")
	switch cc.DefaultQueryExecMode {
	case pgx.QueryExecModeCacheStatement:
		// The default: named prepared statements live in a server session
		// and a transaction-mode pooler does not keep one.
		cc.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	case pgx.QueryExecModeDescribeExec:
		// Its describe and its execution are two round trips, which a
		// transaction-mode pooler may send to two server connections.
		return errors.New("postgres: default_query_exec_mode=describe_exec does not work through a transaction-mode pooler; use cache_describe, exec or simple_protocol")
	}
	return nil
}

// checkSchema verifies that unqualified names resolve in schema: behind a
// transaction pooler the search_path is the role's own setting, which a
// role created by hand may lack.
func checkSchema(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, schema, user, database string) error {
	var current *string
	if err := q.QueryRow(ctx, "SELECT current_schema()").Scan(&current); err != nil {
		return fmt.Errorf("postgres: read search_path: %w", err)
	}
	if current == nil || *current != schema {
		got := "(none)"
		if current != nil {
			got = *current
		}
		return fmt.Errorf("postgres: behind a transaction pooler the search_path is the role's: role %s in database %s resolves names in schema %s, want %s (ALTER ROLE %s IN DATABASE %s SET search_path TO %s; server connections the pooler opened before keep the old path until it replaces them: RECONNECT on its admin console)",
			user, database, got, schema, pgx.Identifier{user}.Sanitize(), pgx.Identifier{database}.Sanitize(), pgx.Identifier{schema}.Sanitize())
	}
	return nil
}

// Connect opens one connection as the service's role (a session of its
// own: the outbox relay's LISTEN), with the pooler's rules; behind a
// transaction pooler it checks the search_path.
func Connect(ctx context.Context, url, schema string, p Pooler) (*pgx.Conn, error) {
	cc, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse url: %w", err)
	}
	if err := connConfig(cc, schema, p); err != nil {
		return nil, err
	}
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = DefaultConnectTimeout
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, err
	}
	if p == PoolerTransaction {
		if err := checkSchema(ctx, conn, schema, cc.User, cc.Database); err != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	return conn, nil
}

// roleSearchPath makes schema the search_path of g.role in the current
// database (ALTER ROLE ... IN DATABASE ... SET search_path), which is what
// a transaction pooler's server connections start with, unless it is so
// already. A migrating role without the right to (neither superuser nor
// CREATEROLE) leaves it to the administrator; Open names the statement
// when it is missing behind a pooler.
func roleSearchPath(ctx context.Context, tx pgx.Tx, schema, role string) (bool, error) {
	var set bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_db_role_setting s
		JOIN pg_roles r ON r.oid = s.setrole JOIN pg_database d ON d.oid = s.setdatabase
		WHERE r.rolname = $1 AND d.datname = current_database() AND $2 = ANY (s.setconfig))`,
		role, "search_path="+schema).Scan(&set)
	if err != nil || set {
		return set, err
	}
	var stmt string
	if err := tx.QueryRow(ctx, `SELECT format('ALTER ROLE %I IN DATABASE %I SET search_path TO %I', $1::text, current_database(), $2::text)`,
		role, schema).Scan(&stmt); err != nil {
		return false, err
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return false, err
	}
	if _, err := sp.Exec(ctx, stmt); err != nil {
		_ = sp.Rollback(ctx)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42501" { // insufficient_privilege
			return false, nil
		}
		return false, fmt.Errorf("search_path of %s: %w", role, err)
	}
	return true, sp.Commit(ctx)
}

// poolConfig is the pool configuration of o.URL.
func poolConfig(o Options) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(o.URL)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse url: %w", err)
	}
	if err := connConfig(cfg.ConnConfig, o.Schema, o.pooler()); err != nil {
		return nil, err
	}
	return cfg, nil
}

func (o Options) pooler() Pooler {
	if o.Pooler == "" {
		return PoolerNone
	}
	return o.Pooler
}
