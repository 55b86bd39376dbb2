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
	db   *pgxpool.Pool
	now  func() time.Time
	wake outbox.Wake
}

// New returns a store on pool (whose search_path is the tickets schema).
// Its events wait for the relay's poll unless WithWake gives it a wake.
func New(db *pgxpool.Pool, now func() time.Time) *Store { return &Store{db: db, now: now} }

// WithWake returns the store that calls wake after every commit (boot.Deps'
// OutboxWake: the tickets binary's relay, or a NOTIFY to it from the
// assistant), so its events are published at once.
func (s *Store) WithWake(wake func()) *Store {
	c := *s
	c.wake = wake
	return &c
}

// inTx runs fn in a transaction and, when it commits, wakes the outbox
// relay: the transaction adds its events (outbox.Add) without a NOTIFY.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.wake.InTx(ctx, s.db, fn)
}
