// Package postgres is the auth schema's store.
package postgres

import (
	"context"
	"embed"
	"errors"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/outbox"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/auth/internal/auth"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations are the schema's numbered migrations.
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrations, "migrations")
	return sub
}

// Schema is the service's own schema.
const Schema = "auth"

// Store implements auth.Store.
type Store struct {
	db   *pgxpool.Pool
	wake outbox.Wake
}

// New returns a store on pool (whose search_path is the auth schema).
// Its events wait for the relay's poll unless WithWake gives it a wake.
func New(db *pgxpool.Pool) *Store { return &Store{db: db} }

// WithWake returns the store that calls wake (the auth binary's outbox
// relay, boot.Deps' OutboxWake) after every commit that wrote an event, so
// it is published at once: those transactions run through outbox.Wake.InTx
// and send no NOTIFY, whose lock would serialise the commits.
func (s *Store) WithWake(wake func()) *Store {
	c := *s
	c.wake = wake
	return &c
}

const accountCols = `a.account_id, a.customer_id, a.email, a.name, a.role, a.password_hash, a.password_changed_at, a.created_at, a.available,
	coalesce(a.language, '')`

func scanAccount(row pgx.Row, extra ...any) (auth.Account, error) {
	var a auth.Account
	dest := append([]any{&a.ID, &a.CustomerID, &a.Email, &a.Name, &a.Role, &a.PasswordHash, &a.PasswordChangedAt, &a.CreatedAt, &a.Available, &a.Language}, extra...)
	err := row.Scan(dest...)
	return a, err
}

// AccountByEmail finds an enabled account of a live customer.
func (s *Store) AccountByEmail(ctx context.Context, email string) (auth.Account, error) {
	a, err := scanAccount(s.db.QueryRow(ctx, `SELECT `+accountCols+`
		FROM accounts a JOIN customers c USING (customer_id)
		WHERE lower(a.email) = lower($1) AND a.disabled_at IS NULL AND c.deleted_at IS NULL`, email))
	return a, postgres.Error(err, "account")
}

// Account returns an account with its customer, scoped to the customer,
// without the password columns (auth.Store): GET /api/Customers/me reads it
// on every call, and the hash was the row's longest value, scanned into a
// string nobody used.
func (s *Store) Account(ctx context.Context, customerID, accountID int64) (auth.Account, auth.Customer, error) {
	var a auth.Account
	var c auth.Customer
	err := s.db.QueryRow(ctx, `SELECT a.account_id, a.email, a.name, a.role, a.created_at, a.available, coalesce(a.language, ''),
			c.customer_id, c.name, c.created_at
		FROM accounts a JOIN customers c USING (customer_id)
		WHERE a.customer_id = $1 AND a.account_id = $2 AND a.disabled_at IS NULL AND c.deleted_at IS NULL`,
		customerID, accountID).Scan(&a.ID, &a.Email, &a.Name, &a.Role, &a.CreatedAt, &a.Available, &a.Language,
		&c.ID, &c.Name, &c.CreatedAt)
	a.CustomerID = c.ID
	return a, c, postgres.Error(err, "account")
}

// CustomerExists reports whether a live customer has this id.
func (s *Store) CustomerExists(ctx context.Context, customerID int64) (bool, error) {
	var ok bool
	err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM customers WHERE customer_id = $1 AND deleted_at IS NULL)`, customerID).Scan(&ok)
	return ok, postgres.Error(err, "customer")
}

// RequestPasswordReset stores the reset and its event when email belongs to
// an enabled account of a live customer. An unknown address goes through the
// same two statements in a transaction that commits a write either way (it
// takes a transaction id, so its commit is flushed to the WAL like a
// write's), gets its event encoded too, and wakes the relay, only nothing
// is inserted.
// pkg/outbox.Add always inserts, so the conditional insert is written here;
// the message itself comes from outbox.Event like every other event.
func (s *Store) RequestPasswordReset(ctx context.Context, email string, r auth.PasswordReset) error {
	err := s.wake.InTx(ctx, s.db, func(tx pgx.Tx) error {
		var a auth.Account // the zero account when the address is unknown
		err := tx.QueryRow(ctx, `SELECT a.account_id, a.customer_id, a.email, a.name
			FROM accounts a JOIN customers c USING (customer_id)
			WHERE lower(a.email) = lower($1) AND a.disabled_at IS NULL AND c.deleted_at IS NULL
			FOR SHARE OF a`, email).Scan(&a.ID, &a.CustomerID, &a.Email, &a.Name)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		msg, err := outbox.Event(ctx, contracts.EventPasswordResetRequested, a.CustomerID, r.CreatedAt,
			contracts.PasswordResetRequested{AccountID: a.ID, Email: a.Email, Name: a.Name, ExpiresAt: r.ExpiresAt.UTC()})
		if err != nil {
			return err
		}
		// The raw token leaves only in the mail: the queue row holds the
		// link until the mail is settled, the reset only the token's hash,
		// and the event neither.
		_, err = tx.Exec(ctx, `WITH acc AS (SELECT account_id, email, name, language FROM accounts WHERE account_id = $1),
			reset AS (INSERT INTO password_resets (account_id, token_hash, created_at, expires_at)
				SELECT account_id, $2, $3, $4 FROM acc),
			mail AS (INSERT INTO mail_queue (account_id, kind, recipient, name, language, link, expires_at, next_attempt_at, created_at)
				SELECT account_id, 'password-reset', email, name, coalesce(language, ''), $11, $4, $3, $3 FROM acc),
			event AS (INSERT INTO outbox (event_id, subject, data, request_id, traceparent, tracestate)
				SELECT $5, $6, $7, $8, NULLIF($9, ''), NULLIF($10, '') FROM acc)
			SELECT pg_current_xact_id()`,
			a.ID, r.TokenHash, r.CreatedAt, r.ExpiresAt, msg.ID, msg.Subject, msg.Data, msg.RequestID, msg.TraceParent, msg.TraceState, r.Link)
		return err
	})
	return postgres.Error(err, "password reset")
}

// ResetPassword spends a valid token, sets the password, voids the
// account's other outstanding reset tokens and records the password-changed
// event, in one transaction.
func (s *Store) ResetPassword(ctx context.Context, tokenHash []byte, now time.Time, newHash string) (auth.Account, error) {
	var a auth.Account
	err := s.wake.InTx(ctx, s.db, func(tx pgx.Tx) error {
		var accountID int64
		err := tx.QueryRow(ctx, `SELECT account_id FROM password_resets
			WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 FOR UPDATE`, tokenHash, now).Scan(&accountID)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE password_resets SET used_at = $2 WHERE account_id = $1 AND used_at IS NULL`, accountID, now); err != nil {
			return err
		}
		a, err = scanAccount(tx.QueryRow(ctx, `UPDATE accounts a SET password_hash = $2, password_changed_at = $3
			WHERE account_id = $1 AND disabled_at IS NULL RETURNING `+accountCols, accountID, newHash, now))
		if err != nil {
			return err
		}
		// The owner is told by mail; reset mails still waiting carry a
		// token that is void now, so they are not sent.
		if _, err := tx.Exec(ctx, `UPDATE mail_queue SET state = 'expired', link = NULL, settled_at = $2,
				last_error = 'the password was changed before it was sent'
			WHERE account_id = $1 AND kind = 'password-reset' AND state = 'pending'`, a.ID, now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO mail_queue (account_id, kind, recipient, name, language, next_attempt_at, created_at)
			SELECT account_id, 'password-changed', email, name, coalesce(language, ''), $2, $2 FROM accounts WHERE account_id = $1`,
			a.ID, now); err != nil {
			return err
		}
		msg, err := outbox.Event(ctx, contracts.EventPasswordChanged, a.CustomerID, now, contracts.PasswordChanged{AccountID: a.ID})
		if err != nil {
			return err
		}
		return outbox.Add(ctx, tx, msg)
	})
	return a, postgres.Error(err, "reset token")
}

// CreateAccount inserts an account.
func (s *Store) CreateAccount(ctx context.Context, in auth.Account) (auth.Account, error) {
	a, err := scanAccount(s.db.QueryRow(ctx, `INSERT INTO accounts AS a (customer_id, email, name, role, password_hash, language)
		VALUES ($1, $2, $3, $4, $5, NULLIF($6, '')) RETURNING `+accountCols, in.CustomerID, in.Email, in.Name, in.Role, in.PasswordHash, in.Language))
	if postgres.UniqueViolation(err, "accounts_email_key") {
		// Addresses are global login identities: the answer is the same
		// whichever customer holds the address, and does not say which.
		return a, &apperr.Error{Code: apperr.Conflict, Message: "this e-mail address cannot be used for a new account",
			Fields: map[string]string{"email": "cannot be used for a new account"}}
	}
	return a, postgres.Error(err, "account")
}

// ListAccounts pages through a customer's accounts.
func (s *Store) ListAccounts(ctx context.Context, customerID int64, offset, limit int) ([]auth.Account, int, error) {
	var total int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM accounts WHERE customer_id = $1 AND disabled_at IS NULL`, customerID).Scan(&total); err != nil {
		return nil, 0, postgres.Error(err, "account")
	}
	rows, err := s.db.Query(ctx, `SELECT `+accountCols+` FROM accounts a
		WHERE a.customer_id = $1 AND a.disabled_at IS NULL ORDER BY a.account_id OFFSET $2 LIMIT $3`, customerID, offset, limit)
	if err != nil {
		return nil, 0, postgres.Error(err, "account")
	}
	defer rows.Close()
	var out []auth.Account
	for rows.Next() {
		a, err := scanAccount(rows)
		if err != nil {
			return nil, 0, postgres.Error(err, "account")
		}
		out = append(out, a)
	}
	return out, total, postgres.Error(rows.Err(), "account")
}

// SetAvailability sets an enabled account's availability. The time of the
// change moves only when the value does, so setting the same value again
// keeps the time it took that value.
func (s *Store) SetAvailability(ctx context.Context, customerID, accountID int64, available bool, now time.Time) error {
	tag, err := s.db.Exec(ctx, `UPDATE accounts SET available = $3,
			available_changed_at = CASE WHEN available = $3 THEN available_changed_at ELSE $4 END
		WHERE customer_id = $1 AND account_id = $2 AND disabled_at IS NULL`, customerID, accountID, available, now)
	if err != nil {
		return postgres.Error(err, "account")
	}
	if tag.RowsAffected() == 0 {
		return postgres.Error(pgx.ErrNoRows, "account")
	}
	return nil
}

// DisableAccount disables an enabled account of the customer; it is no
// longer available either.
func (s *Store) DisableAccount(ctx context.Context, customerID, accountID int64, now time.Time) error {
	tag, err := s.db.Exec(ctx, `UPDATE accounts SET disabled_at = $3, available = false,
			available_changed_at = CASE WHEN available THEN $3 ELSE available_changed_at END
		WHERE customer_id = $1 AND account_id = $2 AND disabled_at IS NULL`, customerID, accountID, now)
	if err != nil {
		return postgres.Error(err, "account")
	}
	if tag.RowsAffected() == 0 {
		return postgres.Error(pgx.ErrNoRows, "account")
	}
	return nil
}

// AccountsOf returns enabled accounts of a live customer: those of
// accountIDs that are the customer's, or with none every admin and agent.
func (s *Store) AccountsOf(ctx context.Context, customerID int64, accountIDs []int64) ([]auth.Account, error) {
	q := `SELECT ` + accountCols + ` FROM accounts a JOIN customers c USING (customer_id)
		WHERE a.customer_id = $1 AND a.disabled_at IS NULL AND c.deleted_at IS NULL`
	args := []any{customerID}
	if len(accountIDs) == 0 {
		q += ` AND a.role IN ('admin', 'agent')`
	} else {
		q += ` AND a.account_id = ANY($2)`
		args = append(args, accountIDs)
	}
	rows, err := s.db.Query(ctx, q+` ORDER BY a.account_id`, args...)
	if err != nil {
		return nil, postgres.Error(err, "account")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (auth.Account, error) { return scanAccount(row) })
	return out, postgres.Error(err, "account")
}

// Bootstrap creates the customer and admin account, or when the e-mail
// already exists updates that account's password, name and customer name.
func (s *Store) Bootstrap(ctx context.Context, customerName string, in auth.Account) (auth.Customer, auth.Account, error) {
	var c auth.Customer
	var a auth.Account
	err := postgres.InTx(ctx, s.db, func(tx pgx.Tx) error {
		// Serialise concurrent bootstraps of the same address.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('bootstrap:' || lower($1)))`, in.Email); err != nil {
			return err
		}
		var err error
		a, err = scanAccount(tx.QueryRow(ctx, `UPDATE accounts a SET password_hash = $2, name = $3, role = 'admin',
			password_changed_at = now(), disabled_at = NULL, language = coalesce(NULLIF($4, ''), language)
			WHERE lower(email) = lower($1) RETURNING `+accountCols,
			in.Email, in.PasswordHash, in.Name, in.Language))
		switch {
		case err == nil:
			return tx.QueryRow(ctx, `UPDATE customers SET name = $2, deleted_at = NULL WHERE customer_id = $1
				RETURNING customer_id, name, created_at`, a.CustomerID, customerName).Scan(&c.ID, &c.Name, &c.CreatedAt)
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO customers (name) VALUES ($1) RETURNING customer_id, name, created_at`,
			customerName).Scan(&c.ID, &c.Name, &c.CreatedAt); err != nil {
			return err
		}
		a, err = scanAccount(tx.QueryRow(ctx, `INSERT INTO accounts AS a (customer_id, email, name, role, password_hash, language)
			VALUES ($1, $2, $3, 'admin', $4, NULLIF($5, '')) RETURNING `+accountCols, c.ID, in.Email, in.Name, in.PasswordHash, in.Language))
		return err
	})
	return c, a, postgres.Error(err, "account")
}
