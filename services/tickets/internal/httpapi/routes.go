package httpapi

import "github.com/gin-gonic/gin"

// Routes registers every route of the tickets service.
//
// Every route needs a bearer token; every role (admin, agent, integration)
// reads and writes end users, and everything is scoped to the token's
// customer. POST takes an Idempotency-Key (idempotent runs after the token
// middleware, as it is scoped to the customer).
func (h *Handlers) Routes(e *gin.Engine, requireToken, idempotent gin.HandlerFunc) {
	api := e.Group("", requireToken)
	api.GET("/api/EndUsers", h.s.Handle(h.listEndUsers))
	api.GET("/api/EndUsers/:id", h.s.Handle(h.getEndUser))
	api.POST("/api/EndUsers", idempotent, h.s.Handle(h.createEndUser))
	api.PUT("/api/EndUsers/:id", h.s.Handle(h.updateEndUser))
	api.DELETE("/api/EndUsers/:id", h.s.Handle(h.deleteEndUser))
}
