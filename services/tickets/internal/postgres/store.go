// Package postgres is the tickets schema's store. Every query is scoped by
// customer_id, and every change writes its event to the outbox table in its
// own transaction.
package postgres

import (
	"context"
	"embed"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"supportplatform.dev/pkg/outbox"
	"supportplatform.dev/pkg/postgres"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations are the schema's numbered migrations.
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrations, "migrations")
	return sub
}

// Schema is the tickets context's own schema.
const Schema = "tickets"

// Store is the tickets schema.
type Store struct {
	db  *pgxpool.Pool
	now func() time.Time
}

// New returns a store on pool (whose search_path is the tickets schema).
func New(db *pgxpool.Pool, now func() time.Time) *Store { return &Store{db: db, now: now} }

// inTx runs fn in a transaction and, when it commits, wakes this process's
// outbox relay: the store stages its events (outbox.Stage) instead of a
// NOTIFY per transaction. The relay of another replica sees them at its
// next poll, and each replica relays its own at once.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if err := postgres.InTx(ctx, s.db, fn); err != nil {
		return err
	}
	outbox.Committed()
	return nil
}
