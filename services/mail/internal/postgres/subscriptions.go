package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/outbox"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/requestid"
	"supportplatform.dev/services/mail/internal/mail"
)

// lockedCols are a folder with its channel, client state and renewal mark
// (channel_folders f JOIN channels c).
const lockedCols = `f.folder_id, f.customer_id, f.channel_id, f.external_folder_id, f.display_name, f.auto_retrieve_emails,
	coalesce(f.provider_subscription_id, ''), f.provider_subscription_expiration, f.last_notification_at, f.last_import_at, f.created_at,
	c.channel_id, c.customer_id, c.name, c.kind, coalesce(c.email_address, ''), c.provider, c.provider_tenant_id,
	c.auto_retrieve_emails, c.is_deleted, c.created_at,
	coalesce(f.client_state, ''), f.renew_requested_at, ` + tenantConnected + `,
	coalesce(u.address, ''), coalesce(u.user_id, ''), coalesce(u.user_principal_name, '')`

// lockedFrom joins the mailbox user resolved for the channel's current
// address (none for an older address).
const lockedFrom = ` FROM channel_folders f JOIN channels c ON c.channel_id = f.channel_id
	LEFT JOIN mailbox_users u ON u.customer_id = c.customer_id AND u.channel_id = c.channel_id AND u.address = c.email_address `

// subscribable is the SQL of mail.Channel.Subscribable with both switches
// on: the folder should have a subscription.
const subscribable = `(f.auto_retrieve_emails AND c.auto_retrieve_emails AND NOT c.is_deleted AND c.kind = 'email'
	AND c.provider = 'microsoft365' AND c.email_address IS NOT NULL AND ` + tenantConnected + `)`

func scanLocked(row pgx.Row) (mail.LockedFolder, error) {
	var lf mail.LockedFolder
	f, c := &lf.Folder, &lf.Channel
	err := row.Scan(&f.ID, &f.CustomerID, &f.ChannelID, &f.ExternalFolderID, &f.DisplayName, &f.AutoRetrieveEmails,
		&f.SubscriptionID, &f.SubscriptionExpiration, &f.LastNotificationAt, &f.LastImportAt, &f.CreatedAt,
		&c.ID, &c.CustomerID, &c.Name, &c.Kind, &c.EmailAddress, &c.Provider, &c.ProviderTenantID,
		&c.AutoRetrieveEmails, &c.IsDeleted, &c.CreatedAt, &lf.ClientState, &lf.RenewRequestedAt, &c.TenantConnected,
		&lf.MailboxUser.Address, &lf.MailboxUser.ID, &lf.MailboxUser.UserPrincipalName)
	for _, t := range []*time.Time{f.SubscriptionExpiration, f.LastNotificationAt, f.LastImportAt, lf.RenewRequestedAt} {
		if t != nil {
			*t = t.UTC()
		}
	}
	return lf, err
}

// SetAutoRetrieve switches automatic retrieval of a live e-mail channel and
// all its folders on or off in one transaction with its channel.updated
// event; switching off retires the folders' subscriptions first. A channel
// that is not the customer's, is deleted, or has no mailbox is NotFound.
func (s *Store) SetAutoRetrieve(ctx context.Context, customerID, channelID int64, on bool) (mail.Switched, error) {
	var sw mail.Switched
	err := s.wake.InTx(ctx, s.db, func(tx pgx.Tx) error {
		c, err := lockLiveChannel(ctx, tx, customerID, channelID)
		if err != nil {
			return err
		}
		if c.Kind != mail.KindEmail || c.EmailAddress == "" {
			return apperr.E(apperr.NotFound, "channel not found")
		}
		sw.Retired = map[int64]string{}
		if !on {
			rows, err := tx.Query(ctx, `SELECT folder_id, provider_subscription_id FROM channel_folders
				WHERE customer_id = $1 AND channel_id = $2 AND provider_subscription_id IS NOT NULL`, customerID, channelID)
			if err != nil {
				return err
			}
			var id int64
			var sub string
			if _, err := pgx.ForEachRow(rows, []any{&id, &sub}, func() error { sw.Retired[id] = sub; return nil }); err != nil {
				return err
			}
			if err := retire(ctx, tx, `f.customer_id = $1 AND f.channel_id = $2`, customerID, channelID); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE channel_folders SET auto_retrieve_emails = $3, updated_at = now()
			WHERE customer_id = $1 AND channel_id = $2`, customerID, channelID, on); err != nil {
			return err
		}
		if sw.Channel, err = scanChannel(tx.QueryRow(ctx, `UPDATE channels SET auto_retrieve_emails = $3, updated_at = now()
			WHERE customer_id = $1 AND channel_id = $2 RETURNING `+channelCols, customerID, channelID, on)); err != nil {
			return err
		}
		if sw.Folders, err = postgres.Collect(ctx, tx, "folder", `SELECT `+folderCols+` FROM channel_folders
			WHERE customer_id = $1 AND channel_id = $2 ORDER BY folder_id`, scanFolder, customerID, channelID); err != nil {
			return err
		}
		return s.addChannelEvent(ctx, tx, contracts.EventChannelUpdated, sw.Channel)
	})
	if err != nil {
		return mail.Switched{}, postgres.Error(err, "channel")
	}
	return sw, nil
}

// SavePending stores the client state of the subscription about to be made
// for a folder that has neither a subscription nor a client state. It
// commits before the provider is called: the provider may notify before the
// new id is stored, and the notification is recognised by this secret.
func (s *Store) SavePending(ctx context.Context, customerID, folderID int64, clientState string) error {
	_, err := s.db.Exec(ctx, `UPDATE channel_folders SET client_state = $3, updated_at = now()
		WHERE customer_id = $1 AND folder_id = $2 AND client_state IS NULL AND provider_subscription_id IS NULL`,
		customerID, folderID, clientState)
	return postgres.Error(err, "folder")
}

// WithFolderLock locks a folder of the customer (SELECT ... FOR UPDATE),
// runs fn, which may call the provider meanwhile, and writes fn's update in
// the same transaction: concurrent syncs of one folder take turns, so only
// one of them creates its subscription.
func (s *Store) WithFolderLock(ctx context.Context, customerID, folderID int64, fn mail.LockedFunc) error {
	err := s.wake.InTx(ctx, s.db, func(tx pgx.Tx) error {
		lf, err := scanLocked(tx.QueryRow(ctx, `SELECT `+lockedCols+lockedFrom+`
			WHERE f.customer_id = $1 AND f.folder_id = $2 FOR UPDATE OF f`, customerID, folderID))
		if err != nil {
			return err
		}
		lf.Stored = storedIn(tx)
		upd, err := fn(ctx, lf)
		if err != nil {
			return err
		}
		return applyUpdate(ctx, tx, lf.Folder, upd)
	})
	return postgres.Error(err, "folder")
}

// ClaimDue locks one folder whose subscription is due for renewal: its
// expiry is before now+window (and it has no renewal mark), or its renewal
// mark is due. Locked folders are skipped, so concurrent renewers take
// different folders; the lock is held while fn calls the provider. False
// when no folder is due.
func (s *Store) ClaimDue(ctx context.Context, now time.Time, window time.Duration, skip mail.ClaimSkip, fn mail.LockedFunc) (bool, error) {
	claimed := false
	err := s.wake.InTx(ctx, s.db, func(tx pgx.Tx) error {
		lf, err := scanLocked(tx.QueryRow(ctx, `SELECT `+lockedCols+lockedFrom+`
			WHERE f.provider_subscription_id IS NOT NULL
			  AND ((f.renew_requested_at IS NULL AND coalesce(f.provider_subscription_expiration, '-infinity') <= $1)
			       OR f.renew_requested_at <= $2)
			  AND NOT (c.provider_tenant_id = ANY($3)) AND NOT (f.folder_id = ANY($4))
			ORDER BY coalesce(f.renew_requested_at, f.provider_subscription_expiration), f.folder_id
			FOR UPDATE OF f SKIP LOCKED LIMIT 1`, now.Add(window), now, nonNil(skip.Tenants), nonNil(skip.Folders)))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		claimed = true
		lf.Stored = storedIn(tx)
		upd, err := fn(ctx, lf)
		if err != nil {
			return err
		}
		return applyUpdate(ctx, tx, lf.Folder, upd)
	})
	return claimed, postgres.Error(err, "folder")
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// applyUpdate writes a locked folder's update.
func applyUpdate(ctx context.Context, tx pgx.Tx, f mail.Folder, u mail.FolderUpdate) error {
	folderID := f.ID
	if u.SaveUser != nil {
		if err := saveMailboxUser(ctx, tx, f.CustomerID, f.ChannelID, *u.SaveUser); err != nil {
			return err
		}
	}
	if u.Retire {
		if err := retire(ctx, tx, `f.folder_id = $1`, folderID); err != nil {
			return err
		}
	}
	if u.Clear {
		if _, err := tx.Exec(ctx, `UPDATE channel_folders SET provider_subscription_id = NULL, provider_subscription_expiration = NULL,
			client_state = NULL, renew_requested_at = NULL, updated_at = now() WHERE folder_id = $1`, folderID); err != nil {
			return err
		}
	}
	if u.Save != nil {
		if _, err := tx.Exec(ctx, `UPDATE channel_folders SET provider_subscription_id = $2, provider_subscription_expiration = $3,
			renew_requested_at = NULL, updated_at = now() WHERE folder_id = $1`, folderID, u.Save.ID, u.Save.Expiration.UTC()); err != nil {
			return err
		}
	}
	if u.RetryAt != nil {
		if _, err := tx.Exec(ctx, `UPDATE channel_folders SET renew_requested_at = $2, updated_at = now() WHERE folder_id = $1`,
			folderID, u.RetryAt.UTC()); err != nil {
			return err
		}
	}
	if u.CatchUpAt != nil {
		subject, msgID, data, err := contracts.MailImportMessage(contracts.MailImportRequest{CustomerID: f.CustomerID,
			ChannelID: f.ChannelID, FolderID: f.ID, Reason: contracts.ImportCatchUp, RequestedAt: u.CatchUpAt.UTC()})
		if err != nil {
			return err
		}
		return outbox.Add(ctx, tx, outbox.Message{ID: msgID, Subject: subject, Data: data, RequestID: requestid.From(ctx)})
	}
	return nil
}

// Missing lists folders that should have a subscription and have none,
// whose renewal mark, if any, is due, leaving out skipped tenants.
func (s *Store) Missing(ctx context.Context, now time.Time, skip mail.ClaimSkip, limit int) ([]mail.Target, error) {
	locked, err := postgres.Collect(ctx, s.db, "folder", `SELECT `+lockedCols+lockedFrom+`
		WHERE f.provider_subscription_id IS NULL AND `+subscribable+`
		  AND (f.renew_requested_at IS NULL OR f.renew_requested_at <= $1)
		  AND NOT (c.provider_tenant_id = ANY($2)) AND NOT (f.folder_id = ANY($3))
		ORDER BY f.folder_id LIMIT $4`, scanLocked, now, nonNil(skip.Tenants), nonNil(skip.Folders), limit)
	if err != nil {
		return nil, err
	}
	out := make([]mail.Target, len(locked))
	for i, lf := range locked {
		out[i] = lf.Target
	}
	return out, nil
}

// RetireUnwanted retires the subscriptions of folders that should not have
// one (a switch, provider or deletion that did not retire them itself).
func (s *Store) RetireUnwanted(ctx context.Context) (int, error) {
	var n int
	err := postgres.InTx(ctx, s.db, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT count(*)`+lockedFrom+`WHERE f.provider_subscription_id IS NOT NULL AND NOT `+subscribable).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		return retire(ctx, tx, `NOT `+subscribable)
	})
	return n, postgres.Error(err, "folder")
}

// ClaimRetired locks one retired subscription (of customerID; of every
// customer for 0) that was never tried or whose next attempt is due,
// skipping locked rows, and runs fn on it: done removes the row, otherwise
// the attempt is counted with its error and next time.
func (s *Store) ClaimRetired(ctx context.Context, customerID int64, now time.Time, skip mail.ClaimSkip,
	fn func(ctx context.Context, r mail.RetiredSubscription) mail.RetiredResult) (bool, error) {
	claimed := false
	err := postgres.InTx(ctx, s.db, func(tx pgx.Tx) error {
		var r mail.RetiredSubscription
		err := tx.QueryRow(ctx, `SELECT provider_subscription_id, customer_id, provider_tenant_id, attempts, last_error
			FROM retired_subscriptions
			WHERE ($1::bigint = 0 OR customer_id = $1) AND (attempts = 0 OR next_attempt_at <= $2)
			  AND NOT (provider_tenant_id = ANY($3)) AND NOT (provider_subscription_id = ANY($4))
			  -- A token is taken only for a tenant connected to the row's
			  -- customer; the others' subscriptions expire at Graph.
			  AND EXISTS (SELECT 1 FROM provider_connections pc WHERE pc.customer_id = retired_subscriptions.customer_id
			    AND pc.tenant_id = retired_subscriptions.provider_tenant_id AND pc.status = 'connected')
			ORDER BY attempts, next_attempt_at, provider_subscription_id
			FOR UPDATE SKIP LOCKED LIMIT 1`, customerID, now, nonNil(skip.Tenants), nonNil(skip.Retired)).
			Scan(&r.ID, &r.CustomerID, &r.TenantID, &r.Attempts, &r.LastError)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		claimed = true
		res := fn(ctx, r)
		if res.Done {
			_, err = tx.Exec(ctx, `DELETE FROM retired_subscriptions WHERE provider_subscription_id = $1`, r.ID)
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE retired_subscriptions SET attempts = attempts + 1, last_error = $2, next_attempt_at = $3
			WHERE provider_subscription_id = $1`, r.ID, res.Error, res.RetryAt.UTC())
		return err
	})
	return claimed, postgres.Error(err, "retired subscription")
}

// RetiredSubscriptions lists the customer's retired subscriptions (0: every
// customer's) with their attempts, oldest first.
func (s *Store) RetiredSubscriptions(ctx context.Context, customerID int64) ([]mail.RetiredSubscription, error) {
	return postgres.Collect(ctx, s.db, "retired subscription", `SELECT provider_subscription_id, customer_id, provider_tenant_id,
		attempts, last_error FROM retired_subscriptions WHERE ($1::bigint = 0 OR customer_id = $1)
		ORDER BY retired_at, provider_subscription_id`, func(row pgx.Row) (mail.RetiredSubscription, error) {
		var r mail.RetiredSubscription
		err := row.Scan(&r.ID, &r.CustomerID, &r.TenantID, &r.Attempts, &r.LastError)
		return r, err
	}, customerID)
}

// CountExpiring counts the subscriptions expiring before now+window.
func (s *Store) CountExpiring(ctx context.Context, now time.Time, window time.Duration) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM channel_folders WHERE provider_subscription_id IS NOT NULL
		AND provider_subscription_expiration <= $1`, now.Add(window)).Scan(&n)
	return n, postgres.Error(err, "folder")
}

// storedIn is LockedFolder.Stored in the lock's transaction: which of ids
// a folder of any customer has stored as its subscription (the orphan
// cleanup never deletes those). In the transaction, so that a lock holder
// needs no second connection while others wait for its lock.
func storedIn(tx pgx.Tx) func(ctx context.Context, ids []string) (map[string]bool, error) {
	return func(ctx context.Context, ids []string) (map[string]bool, error) {
		rows, err := tx.Query(ctx, `SELECT provider_subscription_id FROM channel_folders WHERE provider_subscription_id = ANY($1)`, ids)
		if err != nil {
			return nil, postgres.Error(err, "folder")
		}
		found, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, postgres.Error(err, "folder")
		}
		out := make(map[string]bool, len(found))
		for _, id := range found {
			out[id] = true
		}
		return out, nil
	}
}

// MailboxUser returns the provider user stored for the customer's channel
// (zero when none was resolved yet).
func (s *Store) MailboxUser(ctx context.Context, customerID, channelID int64) (mail.MailboxUser, error) {
	var u mail.MailboxUser
	err := s.db.QueryRow(ctx, `SELECT address, user_id, user_principal_name FROM mailbox_users
		WHERE customer_id = $1 AND channel_id = $2`, customerID, channelID).Scan(&u.Address, &u.ID, &u.UserPrincipalName)
	if errors.Is(err, pgx.ErrNoRows) {
		return mail.MailboxUser{}, nil
	}
	return u, postgres.Error(err, "channel")
}

// SaveMailboxUser stores the provider user resolved for the customer's
// channel's address u.Address.
func (s *Store) SaveMailboxUser(ctx context.Context, customerID, channelID int64, u mail.MailboxUser) error {
	return postgres.Error(saveMailboxUser(ctx, s.db, customerID, channelID, u), "channel")
}

type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// saveMailboxUser touches no channel or folder row (see migration 007).
func saveMailboxUser(ctx context.Context, db execer, customerID, channelID int64, u mail.MailboxUser) error {
	_, err := db.Exec(ctx, `INSERT INTO mailbox_users (customer_id, channel_id, address, user_id, user_principal_name, resolved_at)
		VALUES ($1, $2, $3, $4, $5, now())
		ON CONFLICT (customer_id, channel_id) DO UPDATE SET address = excluded.address, user_id = excluded.user_id,
			user_principal_name = excluded.user_principal_name, resolved_at = excluded.resolved_at`,
		customerID, channelID, u.Address, u.ID, u.UserPrincipalName)
	return err
}
