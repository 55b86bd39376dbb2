package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/mail/internal/mail"
)

const channelCols = `channel_id, customer_id, name, kind, coalesce(email_address, ''), provider, provider_tenant_id,
	auto_retrieve_emails, is_deleted, created_at, ` + channelTenantConnected

// channelTenantConnected is true when the channel (of FROM channels) names
// a tenant connected to its customer: mail.Channel.TenantConnected.
const channelTenantConnected = `EXISTS (SELECT 1 FROM provider_connections pc WHERE pc.customer_id = channels.customer_id
	AND pc.tenant_id = channels.provider_tenant_id AND pc.status = 'connected')`

// tenantConnected is channelTenantConnected over channels c.
const tenantConnected = `EXISTS (SELECT 1 FROM provider_connections pc WHERE pc.customer_id = c.customer_id
	AND pc.tenant_id = c.provider_tenant_id AND pc.status = 'connected')`

func scanChannel(row pgx.Row) (mail.Channel, error) {
	var c mail.Channel
	err := row.Scan(&c.ID, &c.CustomerID, &c.Name, &c.Kind, &c.EmailAddress, &c.Provider, &c.ProviderTenantID,
		&c.AutoRetrieveEmails, &c.IsDeleted, &c.CreatedAt, &c.TenantConnected)
	return c, err
}

func nullText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// channelError turns the one-mailbox-per-customer violation into a 409 on
// emailAddress.
func channelError(err error) error {
	if postgres.UniqueViolation(err, "channels_m365_mailbox_key") {
		return &apperr.Error{Code: apperr.Conflict, Message: "this mailbox is already connected by a live Microsoft 365 channel of another customer",
			Fields: map[string]string{"emailAddress": "is already used by a live microsoft365 channel"}, Err: err}
	}
	if postgres.UniqueViolation(err, "channels_email_key") {
		return &apperr.Error{Code: apperr.Conflict, Message: "another channel of yours already uses this e-mail address",
			Fields: map[string]string{"emailAddress": "is already used by another live channel"}, Err: err}
	}
	return postgres.Error(err, "channel")
}

// ListChannels pages through the customer's channels, deleted ones included
// unless the filter says otherwise.
func (s *Store) ListChannels(ctx context.Context, customerID int64, f mail.ChannelFilter, p paging.Page) ([]mail.Channel, int, error) {
	const where = `WHERE customer_id = $1 AND ($2::text IS NULL OR kind = $2) AND ($3::boolean IS NULL OR is_deleted = $3)`
	return postgres.Page(ctx, s.db, "channel",
		`SELECT count(*) FROM channels `+where,
		`SELECT `+channelCols+` FROM channels `+where+` ORDER BY channel_id LIMIT $4 OFFSET $5`,
		scanChannel, p, customerID, f.Kind, f.IsDeleted)
}

// Channel returns a channel of the customer, deleted or not.
func (s *Store) Channel(ctx context.Context, customerID, id int64) (mail.Channel, error) {
	c, err := scanChannel(s.db.QueryRow(ctx, `SELECT `+channelCols+` FROM channels WHERE customer_id = $1 AND channel_id = $2`, customerID, id))
	return c, postgres.Error(err, "channel")
}

// CreateChannel inserts a channel with its folders (channel.created).
func (s *Store) CreateChannel(ctx context.Context, customerID int64, in mail.ChannelInput) (mail.Channel, error) {
	var c mail.Channel
	err := s.wake.InTx(ctx, s.db, func(tx pgx.Tx) error {
		var err error
		c, err = scanChannel(tx.QueryRow(ctx, `INSERT INTO channels (customer_id, name, kind, email_address, provider,
			provider_tenant_id, auto_retrieve_emails) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+channelCols,
			customerID, in.Name, in.Kind, nullText(in.EmailAddress), in.Provider, in.ProviderTenantID, in.AutoRetrieveEmails))
		if err != nil {
			return channelError(err)
		}
		for _, f := range in.Folders {
			if _, err := insertFolder(ctx, tx, c, f); err != nil {
				return err
			}
		}
		return s.addChannelEvent(ctx, tx, contracts.EventChannelCreated, c)
	})
	return c, err
}

// lockLiveChannel locks a live channel of the customer for the rest of the
// transaction; a deleted channel takes no changes and is not found.
func lockLiveChannel(ctx context.Context, tx pgx.Tx, customerID, id int64) (mail.Channel, error) {
	c, err := scanChannel(tx.QueryRow(ctx, `SELECT `+channelCols+` FROM channels
		WHERE customer_id = $1 AND channel_id = $2 AND NOT is_deleted FOR UPDATE`, customerID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return c, apperr.E(apperr.NotFound, "channel not found")
	}
	return c, err
}

// UpdateChannel replaces a live channel's fields (channel.updated). Its kind
// cannot change. When its mailbox, provider or provider tenant changes, or
// its automatic retrieval is switched off, its folders' subscriptions are
// retired (they were made for what no longer holds).
func (s *Store) UpdateChannel(ctx context.Context, customerID, id int64, in mail.ChannelInput) (mail.Channel, error) {
	var c mail.Channel
	err := s.wake.InTx(ctx, s.db, func(tx pgx.Tx) error {
		old, err := lockLiveChannel(ctx, tx, customerID, id)
		if err != nil {
			return err
		}
		if old.Kind != in.Kind {
			return apperr.Field("kind", "cannot be changed; create a new channel", "a channel's kind cannot change")
		}
		if old.EmailAddress != in.EmailAddress || old.Provider != in.Provider || old.ProviderTenantID != in.ProviderTenantID || !in.AutoRetrieveEmails {
			if err := retire(ctx, tx, `c.channel_id = $1`, id); err != nil {
				return err
			}
		}
		c, err = scanChannel(tx.QueryRow(ctx, `UPDATE channels SET name = $3, email_address = $4, provider = $5,
			provider_tenant_id = $6, auto_retrieve_emails = $7, updated_at = now()
			WHERE customer_id = $1 AND channel_id = $2 RETURNING `+channelCols,
			customerID, id, in.Name, nullText(in.EmailAddress), in.Provider, in.ProviderTenantID, in.AutoRetrieveEmails))
		if err != nil {
			return channelError(err)
		}
		return s.addChannelEvent(ctx, tx, contracts.EventChannelUpdated, c)
	})
	return c, err
}

// DeleteChannel soft-deletes a live channel and retires its subscriptions
// (channel.deleted). Its mailbox is free for a new channel at once.
func (s *Store) DeleteChannel(ctx context.Context, customerID, id int64) (mail.Channel, error) {
	var c mail.Channel
	err := s.wake.InTx(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := lockLiveChannel(ctx, tx, customerID, id); err != nil {
			return err
		}
		if err := retire(ctx, tx, `c.channel_id = $1`, id); err != nil {
			return err
		}
		var err error
		c, err = scanChannel(tx.QueryRow(ctx, `UPDATE channels SET is_deleted = true, deleted_at = now(), updated_at = now()
			WHERE customer_id = $1 AND channel_id = $2 RETURNING `+channelCols, customerID, id))
		if err != nil {
			return postgres.Error(err, "channel")
		}
		return s.addChannelEvent(ctx, tx, contracts.EventChannelDeleted, c)
	})
	return c, err
}
