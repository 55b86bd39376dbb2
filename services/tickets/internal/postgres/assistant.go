package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/services/tickets/internal/assistant"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// SavePreparedReply stores the assistant's reply to a message of the
// customer with its provenance and prompt documents (status prepared) and
// writes ticket.message.updated, in one transaction. A message whose reply
// is already prepared, sent or modified keeps it: false, nothing changes
// (a redelivered event, or an agent who was quicker). A reply without text
// is not stored.
func (s *Store) SavePreparedReply(ctx context.Context, customerID, id int64, r tickets.PreparedReply) (bool, error) {
	if r.Text == "" {
		return false, nil
	}
	docs := make([]promptDocumentRow, len(r.Documents))
	for i, d := range r.Documents {
		docs[i] = promptDocumentRow{DocumentID: d.DocumentID, Title: d.Title, Content: d.Content, Score: d.Score}
	}
	docsJSON, err := json.Marshal(docs)
	if err != nil {
		return false, err
	}
	saved := false
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		m, t, err := s.lockMessage(ctx, tx, customerID, id)
		if err != nil {
			return err
		}
		if m.AIReply.Status != tickets.AIReplyNone && m.AIReply.Status != tickets.AIReplyPending {
			return nil
		}
		now := s.now()
		if _, err := tx.Exec(ctx, `UPDATE ticket_messages SET ai_reply_text = $3, ai_reply_status = $4, ai_reply_at = $5,
			updated_at = $5, ai_reply_engine = $6, ai_reply_model = $7, ai_reply_documents = $8
			WHERE customer_id = $1 AND message_id = $2`,
			customerID, id, r.Text, string(tickets.AIReplyPrepared), now, r.Provenance.Engine, r.Provenance.Model, docsJSON); err != nil {
			return err
		}
		saved = true
		return s.addMessageEvent(ctx, tx, contracts.EventMessageUpdated, t, m, "")
	})
	return saved, postgres.Error(err, "message")
}

// summaryStateRow is a ticket's state and newest message with its cached
// summary (the summary's columns null when none is cached).
type summaryStateRow struct {
	Status        string     `db:"status"`
	LastMessageID int64      `db:"last_message_id"`
	CachedLastID  *int64     `db:"cached_last_message_id"`
	CachedStatus  *string    `db:"cached_status"`
	Summary       *string    `db:"summary"`
	Engine        *string    `db:"engine"`
	Model         *string    `db:"model"`
	CreatedAt     *time.Time `db:"created_at"`
}

// SummaryState reads the customer's ticket's newest message and status and
// its cached summary.
func (s *Store) SummaryState(ctx context.Context, customerID, ticketID int64) (tickets.SummaryState, error) {
	r, err := collectOne[summaryStateRow](s.db.Query(ctx, `SELECT t.status,
		coalesce((SELECT max(m.message_id) FROM ticket_messages m WHERE m.customer_id = t.customer_id AND m.ticket_id = t.ticket_id), 0)
			AS last_message_id,
		s.last_message_id AS cached_last_message_id, s.status AS cached_status, s.summary, s.engine, s.model, s.created_at
		FROM tickets t LEFT JOIN ticket_summaries s ON s.customer_id = t.customer_id AND s.ticket_id = t.ticket_id
		WHERE t.customer_id = $1 AND t.ticket_id = $2`, customerID, ticketID))
	if err != nil {
		return tickets.SummaryState{}, postgres.Error(err, "ticket")
	}
	st := tickets.SummaryState{Status: tickets.Status(r.Status), LastMessageID: r.LastMessageID}
	if r.CachedLastID != nil {
		st.Cached = &tickets.TicketSummary{Text: *r.Summary, LastMessageID: *r.CachedLastID, Status: tickets.Status(*r.CachedStatus),
			Provenance: assistant.Provenance{Engine: *r.Engine, Model: *r.Model}, CreatedAt: *r.CreatedAt}
	}
	return st, nil
}

// SaveSummary caches a ticket's summary, unless one of a newer message is
// cached already (two requests computing at once: the newer one stays). A
// ticket deleted meanwhile is not an error.
func (s *Store) SaveSummary(ctx context.Context, customerID, ticketID int64, sum tickets.TicketSummary) error {
	_, err := s.db.Exec(ctx, `INSERT INTO ticket_summaries AS s (customer_id, ticket_id, last_message_id, status, summary,
		engine, model, created_at)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE EXISTS (SELECT 1 FROM tickets WHERE customer_id = $1 AND ticket_id = $2)
		ON CONFLICT (customer_id, ticket_id) DO UPDATE SET last_message_id = EXCLUDED.last_message_id,
			status = EXCLUDED.status, summary = EXCLUDED.summary, engine = EXCLUDED.engine, model = EXCLUDED.model,
			created_at = EXCLUDED.created_at
		WHERE s.last_message_id <= EXCLUDED.last_message_id`,
		customerID, ticketID, sum.LastMessageID, string(sum.Status), sum.Text, sum.Provenance.Engine, sum.Provenance.Model,
		sum.CreatedAt)
	return postgres.Error(err, "ticket")
}

// FeedbackReport counts, per engine and model, the customer's replies the
// assistant prepared within the window (by ai_reply_at): how many, how
// many were sent as prepared or modified, the escalation comments on the
// messages they answer, and the dislikes of those messages and of the
// replies sent.
func (s *Store) FeedbackReport(ctx context.Context, customerID int64, w tickets.FeedbackWindow) ([]tickets.EngineFeedback, error) {
	rows, err := collectAll[engineFeedbackRow](s.db.Query(ctx, `SELECT m.ai_reply_engine AS engine,
		coalesce(m.ai_reply_model, '') AS model,
		count(*) AS prepared,
		count(*) FILTER (WHERE m.ai_reply_status = 'sent') AS sent_as_prepared,
		count(*) FILTER (WHERE m.ai_reply_status = 'modified') AS modified,
		coalesce(sum((SELECT count(*) FROM feedback_comments f
			WHERE f.customer_id = m.customer_id AND f.message_id = m.message_id)), 0) AS escalations,
		coalesce(sum((SELECT count(*) FROM message_votes v WHERE v.customer_id = m.customer_id AND v.vote = 'dislike'
			AND (v.message_id = m.message_id OR v.message_id = m.ai_reply_sent_message_id))), 0) AS dislikes
		FROM ticket_messages m
		WHERE m.customer_id = $1 AND m.ai_reply_engine IS NOT NULL
			AND ($2::timestamptz IS NULL OR m.ai_reply_at >= $2) AND ($3::timestamptz IS NULL OR m.ai_reply_at < $3)
		GROUP BY 1, 2 ORDER BY 1, 2`, customerID, w.From, w.Before))
	out := convert(rows, engineFeedbackRow.feedback)
	if out == nil {
		out = []tickets.EngineFeedback{}
	}
	return out, postgres.Error(err, "message")
}

// engineFeedbackRow is a row of FeedbackReport.
type engineFeedbackRow struct {
	Engine         string `db:"engine"`
	Model          string `db:"model"`
	Prepared       int    `db:"prepared"`
	SentAsPrepared int    `db:"sent_as_prepared"`
	Modified       int    `db:"modified"`
	Escalations    int    `db:"escalations"`
	Dislikes       int    `db:"dislikes"`
}

func (r engineFeedbackRow) feedback() tickets.EngineFeedback {
	return tickets.EngineFeedback{Provenance: assistant.Provenance{Engine: r.Engine, Model: r.Model}, Prepared: r.Prepared,
		SentAsPrepared: r.SentAsPrepared, Modified: r.Modified, Escalations: r.Escalations, Dislikes: r.Dislikes}
}
