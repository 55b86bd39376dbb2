package httpapi

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// Feedback is what the end user's feedback link calls.
type Feedback interface {
	Vote(ctx context.Context, in tickets.FeedbackInput) (tickets.FeedbackResult, error)
}

type feedbackResponse struct {
	AgentAvailable  bool   `json:"agentAvailable"`
	CustomerRepName string `json:"customerRepName"`
}

// vote: POST /api/TicketMessages/{id}/feedback?token=&vote=, public: the
// ticket token is the credential. The client address is the one the
// gateway saw (X-Forwarded-For from TRUSTED_PROXIES only).
func (h *Handlers) vote(c *gin.Context) error {
	id, err := httpserver.PathID(c)
	if err != nil {
		return err
	}
	q := httpserver.NewQuery(c)
	in := tickets.FeedbackInput{MessageID: id, Token: q.Get("token"), Vote: q.Get("vote"), ClientIP: c.ClientIP()}
	if err := q.Err(); err != nil {
		return err
	}
	res, err := h.Feedback.Vote(c.Request.Context(), in)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, feedbackResponse{AgentAvailable: res.AgentAvailable, CustomerRepName: res.CustomerRepName})
	return nil
}
