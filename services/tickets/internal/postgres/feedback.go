package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// Vote stores the end user's vote on a message of the ticket whose token
// is token (the last vote replaces the one before) and writes
// message.voted, in one transaction. Any mismatch is NotFound.
func (s *Store) Vote(ctx context.Context, messageID int64, token, vote string) (tickets.VoteTarget, error) {
	var t tickets.VoteTarget
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// The message's own row lock orders concurrent votes on it: the
		// one that commits last is the stored vote and the last event.
		if err := tx.QueryRow(ctx, `SELECT t.customer_id, t.ticket_id, t.customer_rep_id
			FROM ticket_messages m JOIN tickets t ON t.customer_id = m.customer_id AND t.ticket_id = m.ticket_id
			WHERE m.message_id = $1 AND t.ticket_token = $2 FOR NO KEY UPDATE OF m`, messageID, token).
			Scan(&t.CustomerID, &t.TicketID, &t.CustomerRepID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO message_votes (message_id, customer_id, vote, voted_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (message_id) DO UPDATE SET vote = EXCLUDED.vote, voted_at = EXCLUDED.voted_at`,
			messageID, t.CustomerID, vote, s.now()); err != nil {
			return err
		}
		return s.addEvent(ctx, tx, contracts.EventMessageVoted, t.CustomerID,
			contracts.MessageVoted{MessageID: messageID, TicketID: t.TicketID, Vote: vote})
	})
	return t, postgres.Error(err, "message")
}
