package httpapi

import "github.com/gin-gonic/gin"

// Routes registers every route of the live service. A ticket needs a
// bearer token; the stream takes a bearer token or a ticket.
func (h *Handlers) Routes(e *gin.Engine, requireToken gin.HandlerFunc) {
	e.POST("/api/live/tickets", requireToken, h.s.Handle(h.createTicket))
	e.GET("/api/live/events", h.s.Handle(h.events))
}
