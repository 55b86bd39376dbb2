// Package postgres is the topics schema's store. Every query is scoped by
// customer_id = $1; mappings are read only through a join on their live
// (not soft-deleted) topic.
package postgres

import (
	"context"
	"embed"
	"errors"
	"io/fs"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/outbox"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations are the schema's numbered migrations.
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrations, "migrations")
	return sub
}

// Schema is the service's own schema.
const Schema = "topics"

// Store is the topics schema. Every change writes its events to the outbox
// table in its own transaction.
type Store struct {
	db   *pgxpool.Pool
	now  func() time.Time // the events' occurredAt
	wake outbox.Wake
}

// New returns a store on pool (whose search_path is the topics schema).
// Its events wait for the relay's poll unless WithWake gives it a wake.
func New(db *pgxpool.Pool, now func() time.Time) *Store { return &Store{db: db, now: now} }

// WithWake returns the store that calls wake (the topics binary's outbox
// relay, boot.Deps' OutboxWake) after every commit, so its events are
// published at once: the changes run through outbox.Wake.InTx and send no
// NOTIFY, whose lock would serialise the commits.
func (s *Store) WithWake(wake func()) *Store {
	c := *s
	c.wake = wake
	return &c
}

// refError is the 400 for a mapping whose topic, action or document does not
// exist for the customer.
func refError(field, msg string) error {
	var v apperr.Validation
	v.Add(field, msg)
	return v.Err()
}

// lockLiveTopic checks that a live topic of the customer exists and holds a
// share lock on it until the transaction ends, so it is not deleted under a
// mapping being written.
func lockLiveTopic(ctx context.Context, tx pgx.Tx, customerID, topicID int64) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM topics WHERE customer_id = $1 AND topic_id = $2 AND deleted_at IS NULL FOR SHARE`,
		customerID, topicID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return refError("topicID", "no topic with this id")
	}
	return err
}

// prefixCols qualifies a comma-separated column list with a table alias.
func prefixCols(alias, cols string) string {
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		parts[i] = alias + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}
