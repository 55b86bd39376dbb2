package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/auth/internal/mail"
)

// maxMailError bounds the reason kept with a mail (a relay's reply).
const maxMailError = 1000

// ClaimMails implements mail.Queue: the due rows are locked with SKIP
// LOCKED, so concurrent senders (replicas) never claim the same row, and
// committed as sending with one attempt more before anything is sent.
func (s *Store) ClaimMails(ctx context.Context, now time.Time, n int) ([]mail.Queued, error) {
	rows, err := s.db.Query(ctx, `UPDATE mail_queue m SET state = 'sending', attempts = m.attempts + 1, claimed_at = $1
		FROM (SELECT mail_id FROM mail_queue WHERE state = 'pending' AND next_attempt_at <= $1
			ORDER BY next_attempt_at, mail_id LIMIT $2 FOR UPDATE SKIP LOCKED) due
		WHERE m.mail_id = due.mail_id
		RETURNING m.mail_id, m.kind, m.recipient, m.name, m.language, coalesce(m.link, ''), m.expires_at,
			m.message_key::text, m.created_at, m.attempts`, now, n)
	if err != nil {
		return nil, postgres.Error(err, "mail")
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (mail.Queued, error) {
		var q mail.Queued
		var expires *time.Time
		err := row.Scan(&q.ID, &q.Kind, &q.To, &q.Name, &q.Language, &q.Link, &expires, &q.MessageKey, &q.CreatedAt, &q.Attempts)
		if expires != nil {
			q.ExpiresAt = *expires
		}
		return q, err
	})
	return out, postgres.Error(err, "mail")
}

// SettleMail implements mail.Queue. A row that is no longer being sent (it
// was abandoned meanwhile) is left as it is.
func (s *Store) SettleMail(ctx context.Context, id int64, state string, now time.Time, reason string) error {
	_, err := s.db.Exec(ctx, `UPDATE mail_queue SET state = $2, settled_at = $3, link = NULL, last_error = $4
		WHERE mail_id = $1 AND state = 'sending'`, id, state, now, clip(reason))
	return postgres.Error(err, "mail")
}

// RetryMail implements mail.Queue.
func (s *Store) RetryMail(ctx context.Context, id int64, at time.Time, reason string) error {
	_, err := s.db.Exec(ctx, `UPDATE mail_queue SET state = 'pending', next_attempt_at = $2, claimed_at = NULL, last_error = $3
		WHERE mail_id = $1 AND state = 'sending'`, id, at, clip(reason))
	return postgres.Error(err, "mail")
}

// AbandonMails implements mail.Queue.
func (s *Store) AbandonMails(ctx context.Context, before, now time.Time) (int, error) {
	tag, err := s.db.Exec(ctx, `UPDATE mail_queue SET state = 'unknown', settled_at = $2, link = NULL,
			last_error = 'the sender stopped during the delivery'
		WHERE state = 'sending' AND claimed_at < $1`, before, now)
	if err != nil {
		return 0, postgres.Error(err, "mail")
	}
	return int(tag.RowsAffected()), nil
}

// PurgeMails implements mail.Queue.
func (s *Store) PurgeMails(ctx context.Context, before time.Time) (int, error) {
	tag, err := s.db.Exec(ctx, `DELETE FROM mail_queue WHERE settled_at < $1`, before)
	if err != nil {
		return 0, postgres.Error(err, "mail")
	}
	return int(tag.RowsAffected()), nil
}

func clip(s string) string {
	r := []rune(s)
	if len(r) > maxMailError {
		return string(r[:maxMailError])
	}
	return s
}
