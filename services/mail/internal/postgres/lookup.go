package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/mail/internal/mail"
)

// The provider callbacks have no customer (the provider sends no token):
// these lookups reach folders by subscription id or mailbox across
// customers, by design, and everything they return carries its customer id.

// targetSQL selects a folder (folderCols), its client state and its channel
// (channelCols) for the folders that where (over channel_folders) matches.
// The lateral subquery lets both column lists stay unqualified.
func targetSQL(where string) string {
	return `SELECT f.*, ch.* FROM (SELECT ` + folderCols + `, coalesce(client_state, '') AS cs
		FROM channel_folders WHERE ` + where + `) f
		CROSS JOIN LATERAL (SELECT ` + channelCols + ` FROM channels WHERE channels.channel_id = f.channel_id) ch`
}

// scanTarget reads targetSQL's columns: scanFolder's, the client state, then
// scanChannel's (same order as folderCols and channelCols).
func scanTarget(row pgx.Row) (mail.Target, error) {
	var t mail.Target
	f, c := &t.Folder, &t.Channel
	err := row.Scan(&f.ID, &f.CustomerID, &f.ChannelID, &f.ExternalFolderID, &f.DisplayName, &f.AutoRetrieveEmails,
		&f.SubscriptionID, &f.SubscriptionExpiration, &f.LastNotificationAt, &f.LastImportAt, &f.CreatedAt,
		&f.SkippedMessages, &f.LastSkipReason, &f.LastSkipAt,
		&t.ClientState,
		&c.ID, &c.CustomerID, &c.Name, &c.Kind, &c.EmailAddress, &c.Provider, &c.ProviderTenantID,
		&c.AutoRetrieveEmails, &c.IsDeleted, &c.CreatedAt, &c.TenantConnected)
	for _, tm := range []*time.Time{f.SubscriptionExpiration, f.LastNotificationAt, f.LastImportAt, f.LastSkipAt} {
		if tm != nil {
			*tm = tm.UTC()
		}
	}
	return t, err
}

// TargetBySubscription returns the folder that holds a provider
// subscription, with its channel (deleted or not) and client state;
// NotFound when no folder holds it.
func (s *Store) TargetBySubscription(ctx context.Context, subscriptionID string) (mail.Target, error) {
	t, err := scanTarget(s.db.QueryRow(ctx, targetSQL(`provider_subscription_id = $1`), subscriptionID))
	return t, postgres.Error(err, "subscription")
}

// maxPendingTargets bounds the folders PendingTargets returns: client
// states are random secrets, so more than one is already a surprise.
const maxPendingTargets = 2

// PendingTargets returns the folders whose subscription create is in flight
// with clientState: the client state SavePending stored before the create
// call, and no subscription id yet (storing it, or clearing the folder,
// ends the state). The notification path parks an unknown subscription
// id's items only then.
func (s *Store) PendingTargets(ctx context.Context, clientState string) ([]mail.Target, error) {
	return postgres.Collect(ctx, s.db, "folder", targetSQL(`client_state = $1 AND provider_subscription_id IS NULL`)+`
		ORDER BY f.folder_id LIMIT $2`, scanTarget, clientState, maxPendingTargets)
}

// maxMailboxTargets bounds the folders one mailbox and folder id can name
// (one per customer that registered the mailbox).
const maxMailboxTargets = 20

// TargetsByMailbox returns the folders with the provider folder id
// externalFolderID (exact, case-sensitive) of the live channels whose
// mailbox is mailbox (without case), by address or by the provider user id
// resolved for their current address (the subscriptions' resources name
// that id): one per customer that registered it.
func (s *Store) TargetsByMailbox(ctx context.Context, mailbox, externalFolderID string) ([]mail.Target, error) {
	return postgres.Collect(ctx, s.db, "folder", targetSQL(`external_folder_id = $2 AND channel_id IN
		(SELECT c.channel_id FROM channels c WHERE NOT c.is_deleted AND (c.email_address = lower($1)
			OR EXISTS (SELECT 1 FROM mailbox_users u WHERE lower(u.user_id) = lower($1) AND u.customer_id = c.customer_id
				AND u.channel_id = c.channel_id AND u.address = c.email_address)))`)+`
		ORDER BY f.folder_id LIMIT $3`, scanTarget, mailbox, externalFolderID, maxMailboxTargets)
}

// MarkNotified records that a notification for the folder arrived at at
// (never moving it back). A folder gone meanwhile is no error.
func (s *Store) MarkNotified(ctx context.Context, folderID int64, at time.Time) error {
	_, err := s.db.Exec(ctx, `UPDATE channel_folders SET last_notification_at = $2
		WHERE folder_id = $1 AND (last_notification_at IS NULL OR last_notification_at < $2)`, folderID, at)
	return postgres.Error(err, "folder")
}

// RequestRenewal asks the renewal job to renew the folder's subscription at
// its next round whatever its expiry (the provider's
// reauthorizationRequired). An earlier request stands. NotFound when the
// folder is gone.
func (s *Store) RequestRenewal(ctx context.Context, folderID int64, at time.Time) error {
	tag, err := s.db.Exec(ctx, `UPDATE channel_folders SET renew_requested_at = coalesce(renew_requested_at, $2), updated_at = now()
		WHERE folder_id = $1`, folderID, at)
	if err != nil {
		return postgres.Error(err, "folder")
	}
	if tag.RowsAffected() == 0 {
		return apperr.E(apperr.NotFound, "folder not found")
	}
	return nil
}

// SubscriptionRemoved records the provider's subscriptionRemoved: when the
// folder still holds that subscription, it is cleared and a renewal is
// requested, so that the renewal job creates a new one (and queues a
// catch-up import). A folder that holds another subscription by now, or
// none, is left alone.
func (s *Store) SubscriptionRemoved(ctx context.Context, folderID int64, subscriptionID string, at time.Time) error {
	_, err := s.db.Exec(ctx, `UPDATE channel_folders SET provider_subscription_id = NULL,
		provider_subscription_expiration = NULL, client_state = NULL,
		renew_requested_at = coalesce(renew_requested_at, $3), updated_at = now()
		WHERE folder_id = $1 AND provider_subscription_id = $2`, folderID, subscriptionID, at)
	return postgres.Error(err, "folder")
}
