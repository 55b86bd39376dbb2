package offline

import (
	"context"

	"supportplatform.dev/services/tickets/internal/assistant"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// Summarize implements assistant.Engine with the tickets domain's
// extractive summary (tickets.Summarize), so that the summary without an
// LLM is the same wherever it is made.
func (e *Engine) Summarize(ctx context.Context, subject, status string, turns []assistant.Turn) (string, assistant.Provenance, error) {
	msgs := make([]tickets.Message, len(turns))
	for i, t := range turns {
		msgs[i] = tickets.Message{SenderType: tickets.SenderType(t.SenderType), Text: t.Text}
	}
	s := tickets.Summarize(tickets.Ticket{Subject: subject, Status: tickets.Status(status)}, msgs)
	return s, Provenance, ctx.Err()
}
