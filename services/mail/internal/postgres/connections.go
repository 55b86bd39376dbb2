package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/mail/internal/mail"
)

// Provider connections (migration 006): the Microsoft 365 tenants connected
// to each customer, and the states of the connection attempts in flight.

const connectionCols = `connection_id, customer_id, provider, status, coalesce(tenant_id, ''), signed_in_as, started_by,
	last_error, created_at, connected_at`

func scanConnection(row pgx.Row) (mail.Connection, error) {
	var c mail.Connection
	err := row.Scan(&c.ID, &c.CustomerID, &c.Provider, &c.Status, &c.TenantID, &c.SignedInAs, &c.StartedBy,
		&c.LastError, &c.CreatedAt, &c.ConnectedAt)
	if c.ConnectedAt != nil {
		t := c.ConnectedAt.UTC()
		c.ConnectedAt = &t
	}
	return c, err
}

// errTenantTaken is the refusal of a tenant connected to another customer.
func errTenantTaken(err error) error {
	return &apperr.Error{Code: apperr.Conflict, Err: err,
		Message: "this Microsoft 365 tenant is already connected to another customer; it stays with that customer"}
}

func insertState(ctx context.Context, tx pgx.Tx, st mail.NewConnectionState) error {
	_, err := tx.Exec(ctx, `INSERT INTO provider_connection_states (state_hash, customer_id, connection_id, account_id, phase,
		code_verifier, nonce, tenant_id, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		st.Hash, st.CustomerID, st.ConnectionID, st.AccountID, st.Phase, st.CodeVerifier, st.Nonce, st.TenantID, st.ExpiresAt)
	return err
}

// StartConnection adds a pending connection with its sign-in state, and
// drops states that expired (nobody can use them any more).
func (s *Store) StartConnection(ctx context.Context, customerID, accountID int64, st mail.NewConnectionState) (mail.Connection, error) {
	var c mail.Connection
	err := postgres.InTx(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM provider_connection_states WHERE expires_at < $1`, s.now()); err != nil {
			return err
		}
		var err error
		c, err = scanConnection(tx.QueryRow(ctx, `INSERT INTO provider_connections (customer_id, started_by)
			VALUES ($1, $2) RETURNING `+connectionCols, customerID, accountID))
		if err != nil {
			return err
		}
		st.ConnectionID = c.ID
		return insertState(ctx, tx, st)
	})
	return c, postgres.Error(err, "connection")
}

// ListConnections pages through the customer's connections.
func (s *Store) ListConnections(ctx context.Context, customerID int64, p paging.Page) ([]mail.Connection, int, error) {
	return postgres.Page(ctx, s.db, "connection",
		`SELECT count(*) FROM provider_connections WHERE customer_id = $1`,
		`SELECT `+connectionCols+` FROM provider_connections WHERE customer_id = $1 ORDER BY connection_id LIMIT $2 OFFSET $3`,
		scanConnection, p, customerID)
}

// Connection returns one of the customer's connections.
func (s *Store) Connection(ctx context.Context, customerID, id int64) (mail.Connection, error) {
	c, err := scanConnection(s.db.QueryRow(ctx, `SELECT `+connectionCols+` FROM provider_connections
		WHERE customer_id = $1 AND connection_id = $2`, customerID, id))
	return c, postgres.Error(err, "connection")
}

// DeleteConnection removes a connection of the customer (its states go
// with it). A connected tenant that live microsoft365 channels of the
// customer still name is not disconnected: Conflict.
func (s *Store) DeleteConnection(ctx context.Context, customerID, id int64) error {
	return postgres.InTx(ctx, s.db, func(tx pgx.Tx) error {
		c, err := scanConnection(tx.QueryRow(ctx, `SELECT `+connectionCols+` FROM provider_connections
			WHERE customer_id = $1 AND connection_id = $2 FOR UPDATE`, customerID, id))
		if err != nil {
			return postgres.Error(err, "connection")
		}
		if c.Status == mail.ConnectionConnected {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM channels WHERE customer_id = $1 AND NOT is_deleted
				AND provider = 'microsoft365' AND provider_tenant_id = $2`, customerID, c.TenantID).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return apperr.E(apperr.Conflict, "%d live microsoft365 channel(s) still use this tenant; delete them or remove their provider first", n)
			}
		}
		_, err = tx.Exec(ctx, `DELETE FROM provider_connections WHERE customer_id = $1 AND connection_id = $2`, customerID, id)
		return err
	})
}

// TakeState deletes and returns the state with the hash. An expired state
// is deleted all the same (it is of no use any more) and is NotFound, as an
// unknown or used one is.
func (s *Store) TakeState(ctx context.Context, hash []byte, now time.Time) (mail.ConnectionState, error) {
	var st mail.ConnectionState
	var live bool
	err := s.db.QueryRow(ctx, `DELETE FROM provider_connection_states WHERE state_hash = $1
		RETURNING customer_id, connection_id, account_id, phase, code_verifier, nonce, tenant_id, expires_at > $2`, hash, now).
		Scan(&st.CustomerID, &st.ConnectionID, &st.AccountID, &st.Phase, &st.CodeVerifier, &st.Nonce, &st.TenantID, &live)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !live) {
		return mail.ConnectionState{}, apperr.E(apperr.NotFound, "state not found")
	}
	return st, postgres.Error(err, "state")
}

// SignedIn records the verified tenant of a pending connection and stores
// the consent state.
func (s *Store) SignedIn(ctx context.Context, st mail.ConnectionState, who mail.SignedIn, next mail.NewConnectionState) error {
	return postgres.InTx(ctx, s.db, func(tx pgx.Tx) error {
		var owner int64
		err := tx.QueryRow(ctx, `SELECT customer_id FROM provider_connections
			WHERE provider = 'microsoft365' AND tenant_id = $1 AND status = 'connected'`, who.TenantID).Scan(&owner)
		switch {
		case err == nil && owner == st.CustomerID:
			return apperr.E(apperr.Conflict, "this Microsoft 365 tenant is already connected to your customer")
		case err == nil:
			return errTenantTaken(nil)
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE provider_connections SET status = 'consenting', tenant_id = $3, signed_in_as = $4,
			updated_at = now() WHERE customer_id = $1 AND connection_id = $2 AND status = 'pending'`,
			st.CustomerID, st.ConnectionID, who.TenantID, who.Username)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return apperr.E(apperr.NotFound, "the connection was deleted meanwhile")
		}
		return insertState(ctx, tx, next)
	})
}

// Connect marks a consenting connection connected.
func (s *Store) Connect(ctx context.Context, st mail.ConnectionState, now time.Time) (mail.Connection, error) {
	c, err := scanConnection(s.db.QueryRow(ctx, `UPDATE provider_connections SET status = 'connected', connected_at = $4,
		last_error = '', updated_at = now()
		WHERE customer_id = $1 AND connection_id = $2 AND status = 'consenting' AND tenant_id = $3 RETURNING `+connectionCols,
		st.CustomerID, st.ConnectionID, st.TenantID, now))
	switch {
	case postgres.UniqueViolation(err, "provider_connections_tenant_key"):
		return c, errTenantTaken(err)
	case errors.Is(err, pgx.ErrNoRows):
		return c, apperr.E(apperr.NotFound, "the connection was deleted meanwhile")
	}
	return c, postgres.Error(err, "connection")
}

// FailConnection ends an attempt that is not connected.
func (s *Store) FailConnection(ctx context.Context, customerID, connectionID int64, reason string) error {
	_, err := s.db.Exec(ctx, `UPDATE provider_connections SET status = 'failed', last_error = $3, updated_at = now()
		WHERE customer_id = $1 AND connection_id = $2 AND status <> 'connected'`, customerID, connectionID, reason)
	return postgres.Error(err, "connection")
}

// TenantConnected reports whether tenantID is connected to the customer.
func (s *Store) TenantConnected(ctx context.Context, customerID int64, tenantID string) (bool, error) {
	var ok bool
	err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM provider_connections WHERE customer_id = $1
		AND tenant_id = lower($2) AND status = 'connected')`, customerID, tenantID).Scan(&ok)
	return ok, postgres.Error(err, "connection")
}

// SuspendedChannels counts the live channels listed in channel_suspensions
// that are still switched off (the upgrade's list, for the start-up log).
func (s *Store) SuspendedChannels(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM channel_suspensions s JOIN channels c ON c.channel_id = s.channel_id
		WHERE NOT c.is_deleted AND NOT c.auto_retrieve_emails`).Scan(&n)
	return n, postgres.Error(err, "channel")
}
