package httpapi

import (
	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/authn"
)

// Routes registers every route of the tickets service.
//
// Every route but the end user's feedback link needs a bearer token and is
// scoped to the token's customer; every role (admin, agent, integration)
// reads and writes, but the assistant's feedback report is for admins. POST of end users, tickets and messages takes an
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

	h.assistantRoutes(api)

	// The feedback link is public: the ticket token in it is the credential.
	h.feedbackRoutes(e.Group(""))
}

// ticketRoutes: /api/Tickets.
func (h *Handlers) ticketRoutes(api *gin.RouterGroup, idempotent gin.HandlerFunc) {
	api.GET("/api/Tickets", h.s.Handle(h.listTickets))
	api.POST("/api/Tickets", idempotent, h.s.Handle(h.createTicket))
	api.POST("/api/Tickets/bulk-update", h.s.Handle(h.bulkUpdateTickets))
	api.GET("/api/Tickets/:id", h.s.Handle(h.getTicket))
	api.PUT("/api/Tickets/:id", h.s.Handle(h.updateTicket))
	api.DELETE("/api/Tickets/:id", h.s.Handle(h.deleteTicket))
	api.GET("/api/Tickets/:id/summary", h.s.Handle(h.ticketSummary))
}

// messageRoutes: /api/TicketMessages and the actions on a message.
func (h *Handlers) messageRoutes(api *gin.RouterGroup, idempotent gin.HandlerFunc) {
	api.GET("/api/TicketMessages", h.s.Handle(h.listMessages))
	api.GET("/api/TicketMessages/:id", h.s.Handle(h.getMessage))
	api.POST("/api/TicketMessages", idempotent, h.s.Handle(h.createMessage))
	api.PATCH("/api/TicketMessages/:id", h.s.Handle(h.patchMessage))
	api.DELETE("/api/TicketMessages/:id", h.s.Handle(h.deleteMessage))
	api.PUT("/api/TicketMessages/:id/topics", h.s.Handle(h.setMessageTopics))
	api.POST("/api/TicketMessages/:id/send-reply", h.s.Handle(h.sendReply))
	api.POST("/api/TicketMessages/:id/escalate", h.s.Handle(h.escalateMessage))
	api.POST("/api/TicketMessages/:id/detect-topics", h.s.Handle(h.detectTopics))
	api.GET("/api/TicketMessages/:id/prompt-documents", h.s.Handle(h.promptDocuments))
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

// assistantRoutes: /api/Assistant, the AI assistant's reports (admins).
func (h *Handlers) assistantRoutes(api *gin.RouterGroup) {
	admin := authn.RequireRole(authn.RoleAdmin, h.s.Fail)
	api.GET("/api/Assistant/feedback", admin, h.s.Handle(h.assistantFeedback))
}
