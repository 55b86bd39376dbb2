package httpapi

import "github.com/gin-gonic/gin"

// Routes registers every route of the translation service; all need a token.
func (h *Handlers) Routes(e *gin.Engine, requireToken gin.HandlerFunc) {
	g := e.Group("/api/Translations", requireToken)
	g.POST("/translate", h.s.Handle(h.translate))
	g.POST("/translate-to-html", h.s.Handle(h.translateToHTML))
	g.GET("/detect-language-ai", h.s.Handle(h.detectLanguage))
}
