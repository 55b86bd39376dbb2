package httpapi

import "github.com/gin-gonic/gin"

// Routes registers every route of the tickets service.
//
// Every route but the end user's feedback link needs a bearer token and is
// scoped to the token's customer; every role (admin, agent, integration)
// reads and writes. POST of end users, tickets and messages takes an
// Idempotency-Key (idempotent runs after the token middleware, as it is
// scoped to the customer).
func (h *Handlers) Routes(e *gin.Engine, requireToken, idempotent gin.HandlerFunc) {
	api := e.Group("", requireToken)
	api.GET("/api/EndUsers", h.s.Handle(h.listEndUsers))
	api.GET("/api/EndUsers/:id", h.s.Handle(h.getEndUser))
	api.POST("/api/EndUsers", idempotent, h.s.Handle(h.createEndUser))
	api.PUT("/api/EndUsers/:id", h.s.Handle(h.updateEndUser))
	api.DELETE("/api/EndUsers/:id", h.s.Handle(h.deleteEndUser))

	h.ticketRoutes(api, idempotent)

	h.messageRoutes(api, idempotent)

	h.attachmentRoutes(api)

	// The feedback link is public: the ticket token in it is the credential.
	h.feedbackRoutes(e.Group(""))
}

// ticketRoutes: /api/Tickets.
func (h *Handlers) ticketRoutes(api *gin.RouterGroup, idempotent gin.HandlerFunc) {
}

// messageRoutes: /api/TicketMessages and the actions on a message.
func (h *Handlers) messageRoutes(api *gin.RouterGroup, idempotent gin.HandlerFunc) {
}

// attachmentRoutes: /api/TicketMessages/{id}/attachments.
func (h *Handlers) attachmentRoutes(api *gin.RouterGroup) {
	const upload = "/api/TicketMessages/:id/attachments"
	api.POST(upload, h.s.Handle(h.uploadAttachment))
	// Files are larger than MAX_BODY_BYTES: the upload has its own limit.
	h.limitUploadBody(upload)
	api.GET("/api/TicketMessages/:id/attachments", h.s.Handle(h.listAttachments))
	api.GET("/api/TicketMessages/:id/attachments/:attachmentId", h.s.Handle(h.downloadAttachment))
	api.DELETE("/api/TicketMessages/:id/attachments/:attachmentId", h.s.Handle(h.deleteAttachment))
}

// feedbackRoutes: the end user's vote on a message.
func (h *Handlers) feedbackRoutes(public *gin.RouterGroup) {
	public.POST("/api/TicketMessages/:id/feedback", h.s.Handle(h.vote))
}
