package httpapi

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// Summaries is what GET /api/Tickets/{id}/summary calls.
type Summaries interface {
	Summary(ctx context.Context, customerID, id int64) (string, error)
}

// Assistant is what the /api/Assistant reports call.
type Assistant interface {
	Report(ctx context.Context, customerID int64, w tickets.FeedbackWindow) ([]tickets.EngineFeedback, error)
}

// engineFeedbackResponse is the feedback on one engine and model.
type engineFeedbackResponse struct {
	Engine         string `json:"engine"`
	Model          string `json:"model"`
	Prepared       int    `json:"prepared"`
	SentAsPrepared int    `json:"sentAsPrepared"`
	Modified       int    `json:"modified"`
	Escalations    int    `json:"escalations"`
	Dislikes       int    `json:"dislikes"`
}

type feedbackReportResponse struct {
	Engines []engineFeedbackResponse `json:"engines"`
}

// assistantFeedback is GET /api/Assistant/feedback?from=&to= (dates or
// times as the tickets list's createdFrom/createdTo; to's whole day is in).
func (h *Handlers) assistantFeedback(c *gin.Context) error {
	p, err := principal(c)
	if err != nil {
		return err
	}
	q := httpserver.NewQuery(c)
	var w tickets.FeedbackWindow
	const timeProblem = "must be an ISO 8601 date (2026-01-31) or date and time (2026-01-31T10:00:00Z)"
	if raw := q.Get("from"); raw != "" {
		if from, _, ok := tickets.ParseListTime(raw); ok {
			w.From = &from
		} else {
			q.Invalid("from", timeProblem)
		}
	}
	if raw := q.Get("to"); raw != "" {
		if _, after, ok := tickets.ParseListTime(raw); ok {
			w.Before = &after
		} else {
			q.Invalid("to", timeProblem)
		}
	}
	if err := q.Err(); err != nil {
		return err
	}
	report, err := h.Assistant.Report(c.Request.Context(), p.CustomerID, w)
	if err != nil {
		return err
	}
	out := feedbackReportResponse{Engines: make([]engineFeedbackResponse, len(report))}
	for i, f := range report {
		out.Engines[i] = engineFeedbackResponse{Engine: f.Engine, Model: f.Model, Prepared: f.Prepared,
			SentAsPrepared: f.SentAsPrepared, Modified: f.Modified, Escalations: f.Escalations, Dislikes: f.Dislikes}
	}
	c.JSON(http.StatusOK, out)
	return nil
}
