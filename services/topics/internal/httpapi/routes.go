package httpapi

import "github.com/gin-gonic/gin"

// Routes registers every route of the topics service. All of them need a
// bearer token; everything is scoped to the token's customer.
func (h *Handlers) Routes(e *gin.Engine, requireToken gin.HandlerFunc) {
	p := e.Group("", requireToken)

	p.GET("/api/Topics", h.s.Handle(h.listTopics))
	p.POST("/api/Topics", h.s.Handle(h.createTopic))
	p.GET("/api/Topics/:id", h.s.Handle(h.getTopic))
	p.PUT("/api/Topics/:id", h.s.Handle(h.updateTopic))
	p.DELETE("/api/Topics/:id", h.s.Handle(h.deleteTopic))

	p.GET("/api/TopicActions", h.s.Handle(h.listTopicActions))
	p.POST("/api/TopicActions", h.s.Handle(h.createTopicAction))
	p.POST("/api/TopicActions/bulk", h.s.Handle(h.createTopicActionsBulk))
	p.GET("/api/TopicActions/:id", h.s.Handle(h.getTopicAction))
	p.PUT("/api/TopicActions/:id", h.s.Handle(h.updateTopicAction))
	p.DELETE("/api/TopicActions/:id", h.s.Handle(h.deleteTopicAction))

	p.GET("/api/TopicDocuments", h.s.Handle(h.listTopicDocuments))
	p.POST("/api/TopicDocuments", h.s.Handle(h.createTopicDocument))
	p.GET("/api/TopicDocuments/:id", h.s.Handle(h.getTopicDocument))
	p.PUT("/api/TopicDocuments/:id", h.s.Handle(h.updateTopicDocument))
	p.DELETE("/api/TopicDocuments/:id", h.s.Handle(h.deleteTopicDocument))

	p.GET("/api/PageTopicMappings", h.s.Handle(h.listPageMappings))
	p.POST("/api/PageTopicMappings", h.s.Handle(h.createPageMapping))
	p.GET("/api/PageTopicMappings/lookup", h.s.Handle(h.lookupPage))
	p.GET("/api/PageTopicMappings/:id", h.s.Handle(h.getPageMapping))
	p.PUT("/api/PageTopicMappings/:id", h.s.Handle(h.updatePageMapping))
	p.DELETE("/api/PageTopicMappings/:id", h.s.Handle(h.deletePageMapping))

	p.GET("/api/Actions", h.s.Handle(h.listActions))
	p.POST("/api/Actions", h.s.Handle(h.createAction))
	p.GET("/api/Actions/:id", h.s.Handle(h.getAction))
	p.PUT("/api/Actions/:id", h.s.Handle(h.updateAction))
	p.DELETE("/api/Actions/:id", h.s.Handle(h.deleteAction))

	p.GET("/api/Documents", h.s.Handle(h.listDocuments))
	p.POST("/api/Documents", h.s.Handle(h.createDocument))
	p.GET("/api/Documents/:id", h.s.Handle(h.getDocument))
	p.PUT("/api/Documents/:id", h.s.Handle(h.updateDocument))
	p.DELETE("/api/Documents/:id", h.s.Handle(h.deleteDocument))
}
