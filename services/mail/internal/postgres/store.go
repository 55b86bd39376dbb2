// Package postgres is the mail schema's store. Every query a client request
// reaches is scoped by customer_id; the provider callbacks and the renewal
// job, which have no customer, reach folders only by their provider
// subscription id or mailbox.
package postgres

import (
	"context"
	"embed"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/outbox"
	"supportplatform.dev/services/mail/internal/mail"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations are the schema's numbered migrations.
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrations, "migrations")
	return sub
}

// Schema is the mail context's own schema.
const Schema = "mail"

// Store is the mail schema. Every channel change writes its event to the
// outbox table in its own transaction.
type Store struct {
	db   *pgxpool.Pool
	now  func() time.Time
	wake outbox.Wake
}

// New returns a store on pool (whose search_path is the mail schema).
// Its events wait for the relay's poll unless WithWake gives it a wake.
func New(db *pgxpool.Pool, now func() time.Time) *Store { return &Store{db: db, now: now} }

// WithWake returns the store that calls wake (boot.Deps' OutboxWake:
// mailingest's outbox relay, or a NOTIFY to it from the import worker and
// the renewal job) after every commit of a transaction that may write an
// event, so the event is published at once: those transactions run
// through outbox.Wake.InTx (the others through postgres.InTx) and send no
// NOTIFY.
func (s *Store) WithWake(wake func()) *Store {
	c := *s
	c.wake = wake
	return &c
}

// addChannelEvent writes channel.created, channel.updated or channel.deleted.
func (s *Store) addChannelEvent(ctx context.Context, tx pgx.Tx, eventType string, c mail.Channel) error {
	m, err := outbox.Event(ctx, eventType, c.CustomerID, s.now(), contracts.ChannelChanged{
		ChannelID: c.ID, Name: c.Name, Kind: c.Kind, EmailAddress: c.EmailAddress, Provider: c.Provider,
		AutoRetrieveEmails: c.AutoRetrieveEmails, IsDeleted: c.IsDeleted,
	})
	if err != nil {
		return err
	}
	return outbox.Add(ctx, tx, m)
}

// retire moves the provider subscriptions of the folders that match where
// (over channel_folders f joined to channels c; args from $1) to
// retired_subscriptions and clears them on the folders. It runs before the
// channel row changes, so the retired rows keep the provider tenant they
// were made in.
func retire(ctx context.Context, tx pgx.Tx, where string, args ...any) error {
	if _, err := tx.Exec(ctx, `INSERT INTO retired_subscriptions (provider_subscription_id, customer_id, provider_tenant_id)
		SELECT f.provider_subscription_id, f.customer_id, c.provider_tenant_id
		FROM channel_folders f JOIN channels c ON c.channel_id = f.channel_id
		WHERE f.provider_subscription_id IS NOT NULL AND `+where+`
		ON CONFLICT (provider_subscription_id) DO NOTHING`, args...); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE channel_folders f SET provider_subscription_id = NULL,
		provider_subscription_expiration = NULL, client_state = NULL, renew_requested_at = NULL, updated_at = now()
		FROM channels c WHERE c.channel_id = f.channel_id AND f.provider_subscription_id IS NOT NULL AND `+where, args...)
	return err
}
