package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/mail/internal/mail"
)

const folderCols = `folder_id, customer_id, channel_id, external_folder_id, display_name, auto_retrieve_emails,
	coalesce(provider_subscription_id, ''), provider_subscription_expiration, last_notification_at, last_import_at, created_at,
	skipped_messages, last_skip_reason, last_skip_at`

func scanFolder(row pgx.Row) (mail.Folder, error) {
	var f mail.Folder
	err := row.Scan(&f.ID, &f.CustomerID, &f.ChannelID, &f.ExternalFolderID, &f.DisplayName, &f.AutoRetrieveEmails,
		&f.SubscriptionID, &f.SubscriptionExpiration, &f.LastNotificationAt, &f.LastImportAt, &f.CreatedAt,
		&f.SkippedMessages, &f.LastSkipReason, &f.LastSkipAt)
	for _, t := range []*time.Time{f.SubscriptionExpiration, f.LastNotificationAt, f.LastImportAt, f.LastSkipAt} {
		if t != nil {
			*t = t.UTC()
		}
	}
	return f, err
}

func folderError(err error, externalID string) error {
	if postgres.UniqueViolation(err, "channel_folders_external_key") {
		return &apperr.Error{Code: apperr.Conflict, Message: fmt.Sprintf("the channel already has folder %q", externalID),
			Fields: map[string]string{"externalFolderID": "is already a folder of this channel"}, Err: err}
	}
	return postgres.Error(err, "folder")
}

func insertFolder(ctx context.Context, tx pgx.Tx, c mail.Channel, in mail.FolderInput) (mail.Folder, error) {
	f, err := scanFolder(tx.QueryRow(ctx, `INSERT INTO channel_folders (customer_id, channel_id, external_folder_id,
		display_name, auto_retrieve_emails) VALUES ($1, $2, $3, $4, $5) RETURNING `+folderCols,
		c.CustomerID, c.ID, in.ExternalFolderID, in.DisplayName, in.AutoRetrieveEmails))
	return f, folderError(err, in.ExternalFolderID)
}

// channelExists checks that the customer has the channel (deleted or not):
// a folder read of another customer's channel is not found.
func (s *Store) channelExists(ctx context.Context, customerID, channelID int64) error {
	_, err := s.Channel(ctx, customerID, channelID)
	return err
}

// ListFolders pages through a channel's folders.
func (s *Store) ListFolders(ctx context.Context, customerID, channelID int64, p paging.Page) ([]mail.Folder, int, error) {
	if err := s.channelExists(ctx, customerID, channelID); err != nil {
		return nil, 0, err
	}
	const where = `WHERE customer_id = $1 AND channel_id = $2`
	return postgres.Page(ctx, s.db, "folder",
		`SELECT count(*) FROM channel_folders `+where,
		`SELECT `+folderCols+` FROM channel_folders `+where+` ORDER BY folder_id LIMIT $3 OFFSET $4`,
		scanFolder, p, customerID, channelID)
}

// Folder returns one folder of a channel of the customer.
func (s *Store) Folder(ctx context.Context, customerID, channelID, folderID int64) (mail.Folder, error) {
	f, err := scanFolder(s.db.QueryRow(ctx, `SELECT `+folderCols+` FROM channel_folders
		WHERE customer_id = $1 AND channel_id = $2 AND folder_id = $3`, customerID, channelID, folderID))
	return f, postgres.Error(err, "folder")
}

// AllFolders returns every folder of a channel of the customer.
func (s *Store) AllFolders(ctx context.Context, customerID, channelID int64) ([]mail.Folder, error) {
	return postgres.Collect(ctx, s.db, "folder", `SELECT `+folderCols+` FROM channel_folders
		WHERE customer_id = $1 AND channel_id = $2 ORDER BY folder_id`, scanFolder, customerID, channelID)
}

// CreateFolder adds a folder to a live e-mail channel.
func (s *Store) CreateFolder(ctx context.Context, customerID, channelID int64, in mail.FolderInput) (mail.Folder, error) {
	var f mail.Folder
	err := postgres.InTx(ctx, s.db, func(tx pgx.Tx) error {
		c, err := lockLiveChannel(ctx, tx, customerID, channelID)
		if err != nil {
			return err
		}
		if c.Kind != mail.KindEmail {
			return apperr.E(apperr.Invalid, "only an e-mail channel has folders")
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM channel_folders WHERE channel_id = $1`, channelID).Scan(&n); err != nil {
			return err
		}
		if n >= mail.MaxFolders {
			return apperr.E(apperr.Conflict, "the channel already has %d folders, the most it may have", mail.MaxFolders)
		}
		f, err = insertFolder(ctx, tx, c, in)
		return err
	})
	return f, err
}

// UpdateFolder replaces a folder of a live channel. A subscription made for
// another provider folder, or for a folder switched off, is retired.
func (s *Store) UpdateFolder(ctx context.Context, customerID, channelID, folderID int64, in mail.FolderInput) (mail.Folder, error) {
	var f mail.Folder
	err := postgres.InTx(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := lockLiveChannel(ctx, tx, customerID, channelID); err != nil {
			return err
		}
		if err := retire(ctx, tx, `f.folder_id = $1 AND f.channel_id = $2 AND (f.external_folder_id <> $3 OR NOT $4::boolean)`,
			folderID, channelID, in.ExternalFolderID, in.AutoRetrieveEmails); err != nil {
			return err
		}
		var err error
		f, err = scanFolder(tx.QueryRow(ctx, `UPDATE channel_folders SET external_folder_id = $4, display_name = $5,
			auto_retrieve_emails = $6, updated_at = now()
			WHERE customer_id = $1 AND channel_id = $2 AND folder_id = $3 RETURNING `+folderCols,
			customerID, channelID, folderID, in.ExternalFolderID, in.DisplayName, in.AutoRetrieveEmails))
		return folderError(err, in.ExternalFolderID)
	})
	return f, err
}

// DeleteFolder removes a folder of a live channel, retiring its
// subscription.
func (s *Store) DeleteFolder(ctx context.Context, customerID, channelID, folderID int64) error {
	return postgres.InTx(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := lockLiveChannel(ctx, tx, customerID, channelID); err != nil {
			return err
		}
		if err := retire(ctx, tx, `f.folder_id = $1 AND f.channel_id = $2`, folderID, channelID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM channel_folders WHERE customer_id = $1 AND channel_id = $2 AND folder_id = $3`,
			customerID, channelID, folderID)
		if err != nil {
			return postgres.Error(err, "folder")
		}
		if tag.RowsAffected() == 0 {
			return apperr.E(apperr.NotFound, "folder not found")
		}
		return nil
	})
}
