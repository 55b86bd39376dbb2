package httpapi

import "github.com/gin-gonic/gin"

// Routes registers every route of mailingest.
//
// The provider callbacks are public (the provider cannot send a token): they
// answer the validation handshake and queue imports. The toggles and the
// Channels API need a bearer token; every role reads, only admins write, and
// everything is scoped to the token's customer.
func (h *Handlers) Routes(e *gin.Engine, requireToken, requireAdmin gin.HandlerFunc) {
	// The spec writes both spellings; matching is case-insensitive anyway.
	e.GET("/api/ProviderWebhook", h.s.Handle(h.webhookValidate))
	e.POST("/api/ProviderWebhook", h.s.Handle(h.webhookNotify))
	// Microsoft's redirect after the admin's sign-in and consent: the
	// browser brings no platform token; the single-use state binds it.
	e.GET("/api/ProviderConnections/callback", h.s.Handle(h.connectionCallback))

	admin := e.Group("", requireToken, requireAdmin)
	admin.POST("/api/ProviderWebhook/subscribe/:id", h.s.Handle(h.subscribe))
	admin.POST("/api/ProviderWebhook/unsubscribe/:id", h.s.Handle(h.unsubscribe))
	admin.POST("/api/ProviderConnections", h.s.Handle(h.startConnection))
	admin.GET("/api/ProviderConnections", h.s.Handle(h.listConnections))
	admin.GET("/api/ProviderConnections/:id", h.s.Handle(h.getConnection))
	admin.DELETE("/api/ProviderConnections/:id", h.s.Handle(h.deleteConnection))

	read := e.Group("", requireToken)
	read.GET("/api/Channels", h.s.Handle(h.listChannels))
	read.GET("/api/Channels/:id", h.s.Handle(h.getChannel))
	read.GET("/api/Channels/:id/folders", h.s.Handle(h.listFolders))
	read.GET("/api/Channels/:id/folders/:folderId", h.s.Handle(h.getFolder))

	admin.POST("/api/Channels", h.s.Handle(h.createChannel))
	admin.PUT("/api/Channels/:id", h.s.Handle(h.updateChannel))
	admin.DELETE("/api/Channels/:id", h.s.Handle(h.deleteChannel))
	admin.POST("/api/Channels/:id/folders", h.s.Handle(h.createFolder))
	admin.PUT("/api/Channels/:id/folders/:folderId", h.s.Handle(h.updateFolder))
	admin.DELETE("/api/Channels/:id/folders/:folderId", h.s.Handle(h.deleteFolder))
}
