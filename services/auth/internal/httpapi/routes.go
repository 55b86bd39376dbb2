package httpapi

import (
	"github.com/gin-gonic/gin"
)

// Routes registers every route of the auth service.
func (h *Handlers) Routes(e *gin.Engine, requireToken gin.HandlerFunc) {
	// Public.
	e.POST("/api/Auth/login", h.s.Handle(h.login))
	e.POST("/api/Auth/forgot-password", h.s.Handle(h.forgotPassword))
	e.POST("/api/Auth/reset-password", h.s.Handle(h.resetPassword))
	e.GET("/api/Auth/jwks", h.jwks)
	e.GET("/.well-known/jwks.json", h.jwks)

	// Bearer token required.
	p := e.Group("", requireToken)
	p.POST("/api/Auth/logout", h.s.Handle(h.logout))
	p.GET("/api/Customers/me", h.s.Handle(h.me))
	p.GET("/api/Accounts", h.s.Handle(h.listAccounts))
	p.POST("/api/Accounts", h.s.Handle(h.createAccount))
	p.GET("/api/Accounts/:id", h.s.Handle(h.getAccount))
	p.DELETE("/api/Accounts/:id", h.s.Handle(h.deleteAccount))
	// Gin keeps a tree per method, and since 1.8 a static segment may sit
	// beside a parameter anyway, so "me" does not clash with :id.
	p.PUT("/api/Accounts/me/availability", h.s.Handle(h.setAvailability))
}
