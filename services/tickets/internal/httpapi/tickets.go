package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/httpcrud"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// Tickets is what the Tickets API calls of the domain.
type Tickets interface {
	ListTickets(ctx context.Context, customerID int64, f tickets.TicketFilter, p paging.Page) (tickets.TicketList, error)
	Ticket(ctx context.Context, customerID, id int64) (tickets.TicketDetails, error)
	CreateTicket(ctx context.Context, customerID int64, in tickets.CreateTicketInput) (tickets.TicketDetails, error)
	UpdateTicket(ctx context.Context, customerID, id int64, p tickets.TicketPatch) error
	DeleteTicket(ctx context.Context, customerID, id int64) error
	BulkUpdate(ctx context.Context, customerID int64, in tickets.BulkInput) error
}

type ticketCreateRequest struct {
	Subject          string          `json:"subject"`
	ChannelID        int64           `json:"channelID"`
	EndUserID        int64           `json:"endUserID"`
	Status           string          `json:"status"`
	CustomerRepID    *int64          `json:"customerRepID"`
	CustomFieldsData json.RawMessage `json:"customFieldsData"`
}

func (r ticketCreateRequest) Input() tickets.CreateTicketInput {
	return tickets.CreateTicketInput{TicketInput: tickets.TicketInput{Subject: r.Subject, ChannelID: r.ChannelID,
		EndUserID: r.EndUserID, Status: r.Status, CustomFields: r.CustomFieldsData}, CustomerRepID: r.CustomerRepID}
}

// ticketUpdateRequest is a partial update: absent (or null) fields stay as
// they are, except customerRepID (null unassigns) and customFieldsData
// (null is {}). The read-only fields of a ticket are ignored, so a GET body
// may be sent back.
type ticketUpdateRequest struct {
	Subject          *string         `json:"subject"`
	Status           *string         `json:"status"`
	IsClosed         *bool           `json:"isClosed"`
	CustomerRepID    json.RawMessage `json:"customerRepID"`
	CustomFieldsData json.RawMessage `json:"customFieldsData"`
	ChannelID        *int64          `json:"channelID"`
}

func (r ticketUpdateRequest) patch() (tickets.TicketPatch, error) {
	p := tickets.TicketPatch{Subject: r.Subject, Status: r.Status, IsClosed: r.IsClosed, CustomFields: r.CustomFieldsData,
		ChannelID: r.ChannelID}
	if raw := bytes.TrimSpace(r.CustomerRepID); len(raw) > 0 {
		p.CustomerRepIDSet = true
		if string(raw) != "null" {
			var id int64
			if err := json.Unmarshal(raw, &id); err != nil {
				return p, apperr.Field("customerRepID", "must be an account id or null", "the request has invalid fields")
			}
			p.CustomerRepID = &id
		}
	}
	return p, nil
}

type bulkRequest struct {
	TicketIDs     []int64 `json:"ticketIDs"`
	Action        string  `json:"action"`
	CustomerRepID *int64  `json:"customerRepID"`
}

type feedbackCommentResponse struct {
	MessageID   int64     `json:"messageID"`
	Comment     string    `json:"comment"`
	Email       string    `json:"email"`
	DateCreated time.Time `json:"dateCreated"`
}

type ticketResponse struct {
	TicketID           int64                     `json:"ticketID"`
	DateCreated        time.Time                 `json:"dateCreated"`
	DateUpdated        time.Time                 `json:"dateUpdated"`
	Status             string                    `json:"status"`
	Subject            string                    `json:"subject"`
	ChannelID          int64                     `json:"channelID"`
	EndUserID          int64                     `json:"endUserID"`
	CustomerRepID      *int64                    `json:"customerRepID"`
	IsClosed           bool                      `json:"isClosed"`
	Topics             []string                  `json:"topics"`
	AIFeedbackComments []feedbackCommentResponse `json:"aiFeedbackComments"`
	CustomFieldsData   json.RawMessage           `json:"customFieldsData"`
	TicketToken        string                    `json:"ticketToken"`
}

func toTicket(d tickets.TicketDetails) ticketResponse {
	fields := d.CustomFields
	if len(fields) == 0 {
		fields = json.RawMessage(`{}`)
	}
	topics := d.Topics
	if topics == nil {
		topics = []string{}
	}
	fb := make([]feedbackCommentResponse, 0, len(d.FeedbackComments))
	for _, f := range d.FeedbackComments {
		fb = append(fb, feedbackCommentResponse{MessageID: f.MessageID, Comment: f.Comment, Email: f.Email, DateCreated: f.CreatedAt.UTC()})
	}
	return ticketResponse{TicketID: d.ID, DateCreated: d.CreatedAt.UTC(), DateUpdated: d.UpdatedAt.UTC(), Status: string(d.Status),
		Subject: d.Subject, ChannelID: d.ChannelID, EndUserID: d.EndUserID, CustomerRepID: d.CustomerRepID,
		IsClosed: d.IsClosed(), Topics: topics, AIFeedbackComments: fb, CustomFieldsData: fields, TicketToken: d.Token}
}

// ticketFilter reads the list's query parameters; every bad value is a 400
// naming its parameter.
func ticketFilter(q *httpserver.Query) tickets.TicketFilter {
	var f tickets.TicketFilter
	sort, err := tickets.ParseTicketSort(q.Get("sort"))
	q.Merge(err)
	f.Sort = sort
	if raw := q.Get("status"); raw != "" {
		if st, ok := tickets.ParseStatus(raw); ok {
			f.Status = &st
		} else {
			q.Invalid("status", "must be Open, Pending, Escalated, Resolved or Closed")
		}
	}
	f.IsClosed = q.Bool("isClosed")
	f.ChannelID = q.ID("channelId")
	f.EndUserID = q.ID("endUserId")
	f.CustomerRepID = q.ID("customerRepId")
	f.TopicID = q.ID("topicId")
	const timeProblem = "must be an ISO 8601 date (2026-01-31) or date and time (2026-01-31T10:00:00Z)"
	if raw := q.Get("createdFrom"); raw != "" {
		if from, _, ok := tickets.ParseListTime(raw); ok {
			f.CreatedFrom = &from
		} else {
			q.Invalid("createdFrom", timeProblem)
		}
	}
	if raw := q.Get("createdTo"); raw != "" {
		if _, after, ok := tickets.ParseListTime(raw); ok {
			f.CreatedBefore = &after
		} else {
			q.Invalid("createdTo", timeProblem)
		}
	}
	if f.CreatedFrom != nil && f.CreatedBefore != nil && !f.CreatedBefore.After(*f.CreatedFrom) {
		q.Invalid("createdTo", "must not be before createdFrom")
	}
	f.Q = strings.TrimSpace(q.Text("q", tickets.MaxSearchLen))
	f.Cursor = q.Get("cursor")
	if f.Cursor != "" && q.Get("pageNumber") != "" {
		q.Invalid("pageNumber", "must not be given with cursor: a cursor names its page")
	}
	return f
}

// ticketPage is the list envelope with the keyset cursor of the next page.
type ticketPage struct {
	paging.Envelope[ticketResponse]
	NextCursor *string `json:"nextCursor"`
}

func (h *Handlers) listTickets(c *gin.Context) error {
	cid, err := httpcrud.Customer(c)
	if err != nil {
		return err
	}
	q := httpserver.NewQuery(c)
	pg := q.Page()
	f := ticketFilter(q)
	if err := q.Err(); err != nil {
		return err
	}
	l, err := h.Tickets.ListTickets(c.Request.Context(), cid, f, pg)
	if err != nil {
		return err
	}
	out := ticketPage{Envelope: paging.NewEnvelope(paging.Map(l.Items, toTicket), l.Total, pg)}
	if l.Next != "" {
		out.NextCursor = &l.Next
	}
	body, err := appendTicketPage(make([]byte, 0, 64+512*len(out.Items)), out)
	if err != nil {
		return err
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", body)
	return nil
}

func (h *Handlers) getTicket(c *gin.Context) error {
	return httpcrud.GetOne(c, h.Tickets.Ticket, toTicket)
}

func (h *Handlers) createTicket(c *gin.Context) error {
	return httpcrud.CreateOne[ticketCreateRequest](c, "/api/Tickets", h.Tickets.CreateTicket,
		func(d tickets.TicketDetails) int64 { return d.ID }, toTicket)
}

func (h *Handlers) updateTicket(c *gin.Context) error {
	cid, id, err := httpcrud.CustomerAndID(c)
	if err != nil {
		return err
	}
	var req ticketUpdateRequest
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	p, err := req.patch()
	if err != nil {
		return err
	}
	if err := h.Tickets.UpdateTicket(c.Request.Context(), cid, id, p); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

func (h *Handlers) deleteTicket(c *gin.Context) error {
	return httpcrud.DeleteOne(c, h.Tickets.DeleteTicket)
}

func (h *Handlers) bulkUpdateTickets(c *gin.Context) error {
	cid, err := httpcrud.Customer(c)
	if err != nil {
		return err
	}
	var req bulkRequest
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	err = h.Tickets.BulkUpdate(c.Request.Context(), cid, tickets.BulkInput{TicketIDs: req.TicketIDs, Action: req.Action,
		CustomerRepID: req.CustomerRepID})
	if err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

func (h *Handlers) ticketSummary(c *gin.Context) error {
	return httpcrud.GetOne(c, h.Summaries.Summary, func(s string) string { return s })
}
