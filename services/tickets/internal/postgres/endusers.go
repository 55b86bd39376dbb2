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
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// endUserCols are an end user's columns, named for endUserRow.
const endUserCols = `end_user_id, customer_id, name, coalesce(email, '') AS email, coalesce(phone, '') AS phone,
	coalesce(language, '') AS language, custom_fields, created_at, updated_at`

// endUserRow is a row of endUserCols.
type endUserRow struct {
	ID           int64     `db:"end_user_id"`
	CustomerID   int64     `db:"customer_id"`
	Name         string    `db:"name"`
	Email        string    `db:"email"`
	Phone        string    `db:"phone"`
	Language     string    `db:"language"`
	CustomFields []byte    `db:"custom_fields"`
	CreatedAt    time.Time `db:"created_at"`
	UpdatedAt    time.Time `db:"updated_at"`
}

func (r endUserRow) endUser() tickets.EndUser {
	return tickets.EndUser{ID: r.ID, CustomerID: r.CustomerID, Name: r.Name, Email: r.Email, Phone: r.Phone,
		Language: r.Language, CustomFields: r.CustomFields, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// collectEndUser reads the one end user a query of endUserCols returns.
func collectEndUser(rows pgx.Rows, err error) (tickets.EndUser, error) {
	r, err := collectOne[endUserRow](rows, err)
	return r.endUser(), err
}

func nullText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// endUserOrder is the whitelist of ORDER BY clauses; nothing from the
// request reaches the SQL text.
func endUserOrder(s tickets.EndUserSort) string {
	dir := ""
	if s.Desc {
		dir = " DESC"
	}
	switch s.By {
	case tickets.SortByName:
		return "lower(name)" + dir + ", end_user_id" + dir
	case tickets.SortByCreated:
		return "created_at" + dir + ", end_user_id" + dir
	default:
		return "end_user_id" + dir
	}
}

// endUserError turns the one-address-per-customer violation into a 409 on
// email.
func endUserError(err error) error {
	if postgres.UniqueViolation(err, "end_users_email_key") {
		return &apperr.Error{Code: apperr.Conflict, Message: "another end user of yours already has this e-mail address",
			Fields: map[string]string{"email": "is already used by another end user"}, Err: err}
	}
	return postgres.Error(err, "end user")
}

// addEndUserEvent writes end-user.created, .updated or .deleted.
func (s *Store) addEndUserEvent(ctx context.Context, tx pgx.Tx, eventType string, u tickets.EndUser) error {
	m, err := outbox.Event(ctx, eventType, u.CustomerID, s.now(), contracts.EndUserChanged{
		EndUserID: u.ID, Name: u.Name, Email: u.Email, Language: u.Language,
	})
	if err != nil {
		return err
	}
	return outbox.Add(ctx, tx, m)
}

// changeEndUser runs one statement returning an end user and writes its
// event, in one transaction.
func (s *Store) changeEndUser(ctx context.Context, eventType, sql string, args ...any) (tickets.EndUser, error) {
	var u tickets.EndUser
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if u, err = collectEndUser(tx.Query(ctx, sql, args...)); err != nil {
			return err
		}
		return s.addEndUserEvent(ctx, tx, eventType, u)
	})
	return u, err
}

// ListEndUsers pages through the customer's end users.
func (s *Store) ListEndUsers(ctx context.Context, customerID int64, f tickets.EndUserFilter, p paging.Page) ([]tickets.EndUser, int, error) {
	const where = `WHERE customer_id = $1 AND ($2 = '' OR email = lower($2))
		AND ($3 = '' OR strpos(lower(name), lower($3)) > 0 OR strpos(coalesce(email, ''), lower($3)) > 0
			OR strpos(lower(coalesce(phone, '')), lower($3)) > 0)`
	rows, total, err := page[endUserRow](ctx, s.db, "end user",
		`SELECT count(*) FROM end_users `+where,
		`SELECT `+endUserCols+` FROM end_users `+where+` ORDER BY `+endUserOrder(f.Sort)+` LIMIT $4 OFFSET $5`,
		p, customerID, f.Email, f.Q)
	return convert(rows, endUserRow.endUser), total, err
}

// EndUser returns an end user of the customer.
func (s *Store) EndUser(ctx context.Context, customerID, id int64) (tickets.EndUser, error) {
	u, err := collectEndUser(s.db.Query(ctx, `SELECT `+endUserCols+` FROM end_users
		WHERE customer_id = $1 AND end_user_id = $2`, customerID, id))
	return u, postgres.Error(err, "end user")
}

// CreateEndUser inserts an end user (end-user.created).
func (s *Store) CreateEndUser(ctx context.Context, customerID int64, in tickets.EndUserInput) (tickets.EndUser, error) {
	u, err := s.changeEndUser(ctx, contracts.EventEndUserCreated, `INSERT INTO end_users
		(customer_id, name, email, phone, language, custom_fields) VALUES ($1, $2, $3, $4, $5, $6)
		RETURNING `+endUserCols,
		customerID, in.Name, nullText(in.Email), nullText(in.Phone), nullText(in.Language), []byte(in.CustomFields))
	return u, endUserError(err)
}

// UpdateEndUser replaces an end user's fields (end-user.updated).
func (s *Store) UpdateEndUser(ctx context.Context, customerID, id int64, in tickets.EndUserInput) (tickets.EndUser, error) {
	u, err := s.changeEndUser(ctx, contracts.EventEndUserUpdated, `UPDATE end_users SET name = $3, email = $4, phone = $5,
		language = $6, custom_fields = $7, updated_at = now()
		WHERE customer_id = $1 AND end_user_id = $2 RETURNING `+endUserCols,
		customerID, id, in.Name, nullText(in.Email), nullText(in.Phone), nullText(in.Language), []byte(in.CustomFields))
	return u, endUserError(err)
}

// DeleteEndUser deletes an end user without tickets and returns it as it
// was (end-user.deleted); one with tickets is a conflict.
func (s *Store) DeleteEndUser(ctx context.Context, customerID, id int64) (tickets.EndUser, error) {
	u, err := s.changeEndUser(ctx, contracts.EventEndUserDeleted, `DELETE FROM end_users
		WHERE customer_id = $1 AND end_user_id = $2 RETURNING `+endUserCols, customerID, id)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" && pe.ConstraintName == "tickets_end_user_fkey" {
		return u, apperr.Wrap(apperr.Conflict, err, "the end user has tickets and cannot be deleted")
	}
	return u, endUserError(err)
}
