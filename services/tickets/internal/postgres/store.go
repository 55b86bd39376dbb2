// Package postgres is the tickets schema's store. Every query is scoped by
// customer_id, and every change writes its event to the outbox table in its
// own transaction.
package postgres

import (
	"embed"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
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
