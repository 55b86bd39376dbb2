// Package httpapi is the HTTP layer of the topics service: it decodes
// requests, calls the domain and maps results to response types whose JSON
// names are the spec's.
package httpapi

import (
	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/httpcrud"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/services/topics/internal/topics"
)

// Handlers serve the topics routes.
type Handlers struct {
	svc *topics.Service
	s   *httpserver.Server
}

// New returns the handlers.
func New(svc *topics.Service, s *httpserver.Server) *Handlers { return &Handlers{svc: svc, s: s} }

// ---- Topics ----

type topicRequest struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
}

func (r topicRequest) Input() topics.TopicInput {
	var in topics.TopicInput
	if r.Name != nil {
		in.Name = *r.Name
	}
	if r.Description != nil {
		in.Description = *r.Description
	}
	return in
}

type topicResponse struct {
	TopicID     int64  `json:"topicID"`
	CustomerID  int64  `json:"customerID"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

func toTopic(t topics.Topic) topicResponse {
	return topicResponse{TopicID: t.ID, CustomerID: t.CustomerID, Name: t.Name, Description: t.Description}
}

func (h *Handlers) listTopics(c *gin.Context) error {
	return httpcrud.ListPage(c, func(q *httpserver.Query) topics.TopicFilter {
		sort, err := topics.ParseTopicSort(q.Get("sort"))
		q.Merge(err)
		return topics.TopicFilter{Sort: sort, NameContains: q.Text("name", topics.MaxNameLen)}
	}, h.svc.ListTopics, toTopic)
}

func (h *Handlers) getTopic(c *gin.Context) error {
	return httpcrud.GetOne(c, h.svc.Topic, toTopic)
}

func (h *Handlers) createTopic(c *gin.Context) error {
	return httpcrud.CreateOne[topicRequest](c, "/api/Topics", h.svc.CreateTopic, func(t topics.Topic) int64 { return t.ID }, toTopic)
}

func (h *Handlers) updateTopic(c *gin.Context) error {
	return httpcrud.UpdateOne[topicRequest](c, h.svc.UpdateTopic)
}

func (h *Handlers) deleteTopic(c *gin.Context) error {
	return httpcrud.DeleteOne(c, h.svc.DeleteTopic)
}

// ---- Actions ----

type actionRequest struct {
	Name      *string `json:"name"`
	HookName  *string `json:"hookName"`
	ChannelID *int64  `json:"channelID"`
	IsActive  *bool   `json:"isActive"`

	RequiresConfirmation *bool `json:"requiresConfirmation"`
}

func (r actionRequest) Input() topics.ActionInput {
	in := topics.ActionInput{ChannelID: r.ChannelID, IsActive: r.IsActive, RequiresConfirmation: r.RequiresConfirmation}
	if r.Name != nil {
		in.Name = *r.Name
	}
	if r.HookName != nil {
		in.HookName = *r.HookName
	}
	return in
}

type actionResponse struct {
	ActionID   int64  `json:"actionID"`
	CustomerID int64  `json:"customerID"`
	Name       string `json:"name"`
	HookName   string `json:"hookName"`
	ChannelID  *int64 `json:"channelID"`
	IsActive   bool   `json:"isActive"`

	RequiresConfirmation bool `json:"requiresConfirmation"`
}

func toAction(a topics.Action) actionResponse {
	return actionResponse{ActionID: a.ID, CustomerID: a.CustomerID, Name: a.Name, HookName: a.HookName, ChannelID: a.ChannelID,
		IsActive: a.IsActive, RequiresConfirmation: a.RequiresConfirmation}
}

func (h *Handlers) listActions(c *gin.Context) error {
	return httpcrud.ListPage(c, httpcrud.NoFilter, httpcrud.Unfiltered(h.svc.ListActions), toAction)
}

func (h *Handlers) getAction(c *gin.Context) error {
	return httpcrud.GetOne(c, h.svc.Action, toAction)
}

func (h *Handlers) createAction(c *gin.Context) error {
	return httpcrud.CreateOne[actionRequest](c, "/api/Actions", h.svc.CreateAction, func(a topics.Action) int64 { return a.ID }, toAction)
}

func (h *Handlers) updateAction(c *gin.Context) error {
	return httpcrud.UpdateOne[actionRequest](c, h.svc.UpdateAction)
}

func (h *Handlers) deleteAction(c *gin.Context) error {
	return httpcrud.DeleteOne(c, h.svc.DeleteAction)
}

// ---- Documents ----

type documentRequest struct {
	Title     *string `json:"title"`
	Content   *string `json:"content"`
	ChannelID *int64  `json:"channelID"`
	HookName  *string `json:"hookName"`
	IsHook    *bool   `json:"isHook"`
}

func (r documentRequest) Input() topics.DocumentInput {
	in := topics.DocumentInput{ChannelID: r.ChannelID, IsHook: r.IsHook}
	if r.Title != nil {
		in.Title = *r.Title
	}
	if r.Content != nil {
		in.Content = *r.Content
	}
	if r.HookName != nil {
		in.HookName = *r.HookName
	}
	return in
}

type documentResponse struct {
	DocumentID int64  `json:"documentID"`
	CustomerID int64  `json:"customerID"`
	Title      string `json:"title"`
	Content    string `json:"content"`
	ChannelID  *int64 `json:"channelID"`
	HookName   string `json:"hookName"`
	IsHook     bool   `json:"isHook"`
}

func toDocument(d topics.Document) documentResponse {
	return documentResponse{DocumentID: d.ID, CustomerID: d.CustomerID, Title: d.Title, Content: d.Content,
		ChannelID: d.ChannelID, HookName: d.HookName, IsHook: d.IsHook}
}

func (h *Handlers) listDocuments(c *gin.Context) error {
	return httpcrud.ListPage(c, httpcrud.NoFilter, httpcrud.Unfiltered(h.svc.ListDocuments), toDocument)
}

func (h *Handlers) getDocument(c *gin.Context) error {
	return httpcrud.GetOne(c, h.svc.Document, toDocument)
}

func (h *Handlers) createDocument(c *gin.Context) error {
	return httpcrud.CreateOne[documentRequest](c, "/api/Documents", h.svc.CreateDocument, func(d topics.Document) int64 { return d.ID }, toDocument)
}

func (h *Handlers) updateDocument(c *gin.Context) error {
	return httpcrud.UpdateOne[documentRequest](c, h.svc.UpdateDocument)
}

func (h *Handlers) deleteDocument(c *gin.Context) error {
	return httpcrud.DeleteOne(c, h.svc.DeleteDocument)
}
