package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/outbox"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/mail/internal/replier"
)

// The replies' rows (sent_replies): see package replier for the protocol.

const replyCols = `customer_id, message_id, ticket_id, channel_id, status, attempts, last_error, method,
	lease_until, next_attempt_at, sent_at`

func scanReply(row pgx.Row) (replier.Record, error) {
	var r replier.Record
	err := row.Scan(&r.CustomerID, &r.MessageID, &r.TicketID, &r.ChannelID, &r.Status, &r.Attempts, &r.LastError, &r.Method,
		&r.LeaseUntil, &r.NextAttemptAt, &r.SentAt)
	for _, t := range []*time.Time{r.LeaseUntil, r.NextAttemptAt, r.SentAt} {
		if t != nil {
			*t = t.UTC()
		}
	}
	return r, err
}

// SentReply returns a reply's row.
func (s *Store) SentReply(ctx context.Context, customerID, messageID int64) (replier.Record, error) {
	r, err := scanReply(s.db.QueryRow(ctx, `SELECT `+replyCols+` FROM sent_replies WHERE customer_id = $1 AND message_id = $2`,
		customerID, messageID))
	return r, postgres.Error(err, "reply")
}

// ClaimReply creates the reply's row (pending) unless it exists and locks
// it. A pending row is settled as req.Settle asks (failed writes
// message.reply.failed), or else becomes sending by the next attempt until
// req.LeaseUntil. Any other row is returned as it is. Concurrent claims of
// one reply take turns on the row lock: only one of them finds it pending.
func (s *Store) ClaimReply(ctx context.Context, r replier.Reply, req replier.ClaimRequest) (replier.Claim, error) {
	var c replier.Claim
	err := s.wake.InTx(ctx, s.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO sent_replies (customer_id, message_id, ticket_id, channel_id, idempotency_key)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
			r.CustomerID, r.MessageID, r.TicketID, r.ChannelID, r.Key()); err != nil {
			return err
		}
		var err error
		if c.Record, err = scanReply(tx.QueryRow(ctx, `SELECT `+replyCols+` FROM sent_replies
			WHERE customer_id = $1 AND message_id = $2 FOR UPDATE`, r.CustomerID, r.MessageID)); err != nil {
			return err
		}
		if c.Status != replier.StatusPending {
			return nil
		}
		now := s.now().UTC()
		if req.Settle != "" {
			if c.Record, err = scanReply(tx.QueryRow(ctx, `UPDATE sent_replies SET status = $3, last_error = $4,
				lease_until = NULL, next_attempt_at = NULL, updated_at = $5
				WHERE customer_id = $1 AND message_id = $2 RETURNING `+replyCols,
				r.CustomerID, r.MessageID, req.Settle, req.Reason, now)); err != nil {
				return err
			}
			c.Settled = true
			return s.addReplyEvent(ctx, tx, c.Record)
		}
		if c.Record, err = scanReply(tx.QueryRow(ctx, `UPDATE sent_replies SET status = 'sending', attempts = attempts + 1,
			lease_until = $3, next_attempt_at = NULL, updated_at = $4
			WHERE customer_id = $1 AND message_id = $2 RETURNING `+replyCols,
			r.CustomerID, r.MessageID, req.LeaseUntil.UTC(), now)); err != nil {
			return err
		}
		c.Claimed = true
		return nil
	})
	if err != nil {
		return replier.Claim{}, postgres.Error(err, "reply")
	}
	return c, nil
}

// FinishReply records the outcome of attempt `attempt` of a reply that is
// still sending by that attempt: sent (message.reply.delivered), failed
// (message.reply.failed) or pending again for a retry. False, and nothing
// written, when the row is not (the claim had lapsed and another delivery
// settled it).
func (s *Store) FinishReply(ctx context.Context, r replier.Reply, attempt int, f replier.Finish) (bool, error) {
	done := false
	err := s.wake.InTx(ctx, s.db, func(tx pgx.Tx) error {
		now := s.now().UTC()
		var sentAt, retryAt *time.Time
		switch f.Status {
		case replier.StatusSent:
			sentAt = &now
		case replier.StatusPending:
			t := f.RetryAt.UTC()
			retryAt = &t
		}
		rec, err := scanReply(tx.QueryRow(ctx, `UPDATE sent_replies SET status = $4, last_error = $5,
			method = CASE WHEN $6 = '' THEN method ELSE $6 END, sent_at = $7, next_attempt_at = $8,
			lease_until = NULL, updated_at = $9
			WHERE customer_id = $1 AND message_id = $2 AND status = 'sending' AND attempts = $3
			RETURNING `+replyCols,
			r.CustomerID, r.MessageID, attempt, f.Status, f.Error, f.Method, sentAt, retryAt, now))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		done = true
		return s.addReplyEvent(ctx, tx, rec)
	})
	return done, postgres.Error(err, "reply")
}

// addReplyEvent writes message.reply.delivered for a sent reply and
// message.reply.failed for a failed one; nothing for other statuses.
func (s *Store) addReplyEvent(ctx context.Context, tx pgx.Tx, r replier.Record) error {
	eventType := ""
	switch r.Status {
	case replier.StatusSent:
		eventType = contracts.EventReplyDelivered
	case replier.StatusFailed:
		eventType = contracts.EventReplyFailed
	default:
		return nil
	}
	m, err := outbox.Event(ctx, eventType, r.CustomerID, s.now(), contracts.ReplyDelivery{
		MessageID: r.MessageID, TicketID: r.TicketID, Attempts: r.Attempts, Error: r.LastError,
	})
	if err != nil {
		return err
	}
	return outbox.Add(ctx, tx, m)
}
