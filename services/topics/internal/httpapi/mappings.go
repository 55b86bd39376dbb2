package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/httpcrud"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/services/topics/internal/topics"
)

// ---- Topic actions ----

type topicActionRequest struct {
	TopicID  *int64 `json:"topicID"`
	ActionID *int64 `json:"actionID"`
	Priority *int64 `json:"priority"`
	IsActive *bool  `json:"isActive"`
}

func (r topicActionRequest) Input() topics.TopicActionInput {
	return topics.TopicActionInput{TopicID: r.TopicID, ActionID: r.ActionID, Priority: r.Priority, IsActive: r.IsActive}
}

// priorityRequest is the PUT body: only priority is read, other fields are
// ignored.
type priorityRequest struct {
	Priority *int64 `json:"priority"`
}

type topicActionResponse struct {
	TopicActionID int64 `json:"topicActionID"`
	TopicID       int64 `json:"topicID"`
	ActionID      int64 `json:"actionID"`
	Priority      int   `json:"priority"`
	IsActive      bool  `json:"isActive"`
}

func toTopicAction(m topics.TopicAction) topicActionResponse {
	return topicActionResponse{TopicActionID: m.ID, TopicID: m.TopicID, ActionID: m.ActionID, Priority: m.Priority, IsActive: m.IsActive}
}

type bulkTopicActionsResponse struct {
	Items []topicActionResponse `json:"items"`
}

func (h *Handlers) listTopicActions(c *gin.Context) error {
	return httpcrud.ListPage(c, func(q *httpserver.Query) topics.TopicActionFilter {
		return topics.TopicActionFilter{
			TopicID:   q.ID("topicId"),
			ActionID:  q.ID("actionId"),
			HookName:  q.Text("hookName", topics.MaxHookNameLen),
			ChannelID: q.ID("channelId"),
			IsActive:  q.Bool("isActive"),
		}
	}, h.svc.ListTopicActions, toTopicAction)
}

func (h *Handlers) getTopicAction(c *gin.Context) error {
	return httpcrud.GetOne(c, h.svc.TopicAction, toTopicAction)
}

func (h *Handlers) createTopicAction(c *gin.Context) error {
	return httpcrud.CreateOne[topicActionRequest](c, "/api/TopicActions", h.svc.CreateTopicAction, func(m topics.TopicAction) int64 { return m.ID }, toTopicAction)
}

// createTopicActionsBulk accepts {"items": [...]} or a bare array.
func (h *Handlers) createTopicActionsBulk(c *gin.Context) error {
	cid, err := httpcrud.Customer(c)
	if err != nil {
		return err
	}
	in, err := decodeBulk(c)
	if err != nil {
		return err
	}
	ms, err := h.svc.CreateTopicActions(c.Request.Context(), cid, in)
	if err != nil {
		return err
	}
	c.JSON(http.StatusCreated, bulkTopicActionsResponse{Items: paging.Map(ms, toTopicAction)})
	return nil
}

func decodeBulk(c *gin.Context) ([]topics.TopicActionInput, error) {
	var raw json.RawMessage
	if err := httpserver.BindJSON(c, &raw); err != nil {
		return nil, err
	}
	raw = bytes.TrimSpace(raw)
	var elems []json.RawMessage
	switch raw[0] {
	case '[':
		if err := httpserver.DecodeJSON(raw, &elems); err != nil {
			return nil, err
		}
	case '{':
		var w struct {
			Items *[]json.RawMessage `json:"items"`
		}
		if err := httpserver.DecodeJSON(raw, &w); err != nil {
			return nil, err
		}
		if w.Items == nil {
			return nil, fieldError("items", "is required")
		}
		elems = *w.Items
	default:
		return nil, apperr.E(apperr.Invalid, "the request body must be an object with items or an array of items")
	}
	if len(elems) > topics.MaxBulkItems {
		return nil, fieldError("items", fmt.Sprintf("must hold at most %d items", topics.MaxBulkItems))
	}
	var v apperr.Validation
	out := make([]topics.TopicActionInput, len(elems))
	for i, e := range elems {
		prefix := fmt.Sprintf("items[%d]", i)
		if t := bytes.TrimSpace(e); len(t) == 0 || t[0] != '{' {
			v.Add(prefix, "must be an object")
			continue
		}
		var req topicActionRequest
		if err := httpserver.DecodeJSON(e, &req); err != nil {
			var ae *apperr.Error
			if errors.As(err, &ae) && len(ae.Fields) > 0 {
				for k, m := range ae.Fields {
					v.Add(prefix+"."+k, m)
				}
			} else {
				v.Add(prefix, "is not a valid mapping")
			}
			continue
		}
		out[i] = req.Input()
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func fieldError(field, msg string) error {
	var v apperr.Validation
	v.Add(field, msg)
	return v.Err()
}

func (h *Handlers) updateTopicAction(c *gin.Context) error {
	cid, id, err := httpcrud.CustomerAndID(c)
	if err != nil {
		return err
	}
	var req priorityRequest
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	if err := h.svc.UpdateTopicActionPriority(c.Request.Context(), cid, id, req.Priority); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

func (h *Handlers) deleteTopicAction(c *gin.Context) error {
	return httpcrud.DeleteOne(c, h.svc.DeleteTopicAction)
}

// ---- Topic documents ----

type topicDocumentRequest struct {
	TopicID        *int64 `json:"topicID"`
	DocumentID     *int64 `json:"documentID"`
	RelevanceScore *int64 `json:"relevanceScore"`
}

func (r topicDocumentRequest) Input() topics.TopicDocumentInput {
	return topics.TopicDocumentInput{TopicID: r.TopicID, DocumentID: r.DocumentID, RelevanceScore: r.RelevanceScore}
}

// relevanceRequest is the PUT body: only relevanceScore is read.
type relevanceRequest struct {
	RelevanceScore *int64 `json:"relevanceScore"`
}

type topicDocumentResponse struct {
	TopicDocumentID int64 `json:"topicDocumentID"`
	TopicID         int64 `json:"topicID"`
	DocumentID      int64 `json:"documentID"`
	RelevanceScore  int   `json:"relevanceScore"`
}

func toTopicDocument(m topics.TopicDocument) topicDocumentResponse {
	return topicDocumentResponse{TopicDocumentID: m.ID, TopicID: m.TopicID, DocumentID: m.DocumentID, RelevanceScore: m.RelevanceScore}
}

func (h *Handlers) listTopicDocuments(c *gin.Context) error {
	return httpcrud.ListPage(c, func(q *httpserver.Query) topics.TopicDocumentFilter {
		return topics.TopicDocumentFilter{
			TopicID:    q.ID("topicId"),
			DocumentID: q.ID("documentId"),
			ChannelID:  q.ID("channelId"),
			HookName:   q.Text("hookName", topics.MaxHookNameLen),
			IsHook:     q.Bool("isHook"),
		}
	}, h.svc.ListTopicDocuments, toTopicDocument)
}

func (h *Handlers) getTopicDocument(c *gin.Context) error {
	return httpcrud.GetOne(c, h.svc.TopicDocument, toTopicDocument)
}

func (h *Handlers) createTopicDocument(c *gin.Context) error {
	return httpcrud.CreateOne[topicDocumentRequest](c, "/api/TopicDocuments", h.svc.CreateTopicDocument, func(m topics.TopicDocument) int64 { return m.ID }, toTopicDocument)
}

func (h *Handlers) updateTopicDocument(c *gin.Context) error {
	cid, id, err := httpcrud.CustomerAndID(c)
	if err != nil {
		return err
	}
	var req relevanceRequest
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	if err := h.svc.UpdateTopicDocumentScore(c.Request.Context(), cid, id, req.RelevanceScore); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

func (h *Handlers) deleteTopicDocument(c *gin.Context) error {
	return httpcrud.DeleteOne(c, h.svc.DeleteTopicDocument)
}

// ---- Page topic mappings ----

type pageMappingRequest struct {
	TopicID    *int64  `json:"topicID"`
	URLPattern *string `json:"urlPattern"`
	MatchType  *string `json:"matchType"`
}

func (r pageMappingRequest) Input() topics.PageMappingInput {
	in := topics.PageMappingInput{TopicID: r.TopicID}
	if r.URLPattern != nil {
		in.URLPattern = *r.URLPattern
	}
	if r.MatchType != nil {
		in.MatchType = *r.MatchType
	}
	return in
}

type pageMappingResponse struct {
	PageTopicMappingID int64  `json:"pageTopicMappingID"`
	TopicID            int64  `json:"topicID"`
	URLPattern         string `json:"urlPattern"`
	MatchType          string `json:"matchType"`
}

func toPageMapping(m topics.PageMapping) pageMappingResponse {
	return pageMappingResponse{PageTopicMappingID: m.ID, TopicID: m.TopicID, URLPattern: m.URLPattern, MatchType: string(m.MatchType)}
}

type lookupResponse struct {
	URL    string          `json:"url"`
	Topics []topicResponse `json:"topics"`
}

func (h *Handlers) listPageMappings(c *gin.Context) error {
	return httpcrud.ListPage(c, func(q *httpserver.Query) topics.PageMappingFilter {
		f := topics.PageMappingFilter{TopicID: q.ID("topicId")}
		switch mt := topics.MatchType(strings.ToLower(q.Get("matchType"))); mt {
		case "", topics.MatchExact, topics.MatchPrefix:
			f.MatchType = mt
		default:
			q.Invalid("matchType", "must be exact or prefix")
		}
		return f
	}, h.svc.ListPageMappings, toPageMapping)
}

func (h *Handlers) lookupPage(c *gin.Context) error {
	cid, err := httpcrud.Customer(c)
	if err != nil {
		return err
	}
	q := httpserver.NewQuery(c)
	raw := q.Get("url")
	if err := q.Err(); err != nil {
		return err
	}
	u, ts, err := h.svc.TopicsForURL(c.Request.Context(), cid, raw)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, lookupResponse{URL: u, Topics: paging.Map(ts, toTopic)})
	return nil
}

func (h *Handlers) getPageMapping(c *gin.Context) error {
	return httpcrud.GetOne(c, h.svc.PageMapping, toPageMapping)
}

func (h *Handlers) createPageMapping(c *gin.Context) error {
	return httpcrud.CreateOne[pageMappingRequest](c, "/api/PageTopicMappings", h.svc.CreatePageMapping, func(m topics.PageMapping) int64 { return m.ID }, toPageMapping)
}

func (h *Handlers) updatePageMapping(c *gin.Context) error {
	return httpcrud.UpdateOne[pageMappingRequest](c, h.svc.UpdatePageMapping)
}

func (h *Handlers) deletePageMapping(c *gin.Context) error {
	return httpcrud.DeleteOne(c, h.svc.DeletePageMapping)
}
