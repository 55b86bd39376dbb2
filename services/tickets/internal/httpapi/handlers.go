// Package httpapi is the HTTP layer of the tickets service: it decodes
// requests, calls the domain and maps results to response types whose JSON
// names are the spec's.
package httpapi

import (
	"context"
	"encoding/json"
	"time"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/httpcrud"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// EndUsers is what the EndUsers API calls of the domain.
type EndUsers interface {
	ListEndUsers(ctx context.Context, customerID int64, f tickets.EndUserFilter, p paging.Page) ([]tickets.EndUser, int, error)
	EndUser(ctx context.Context, customerID, id int64) (tickets.EndUser, error)
	CreateEndUser(ctx context.Context, customerID int64, in tickets.EndUserInput) (tickets.EndUser, error)
	UpdateEndUser(ctx context.Context, customerID, id int64, in tickets.EndUserInput) (tickets.EndUser, error)
	DeleteEndUser(ctx context.Context, customerID, id int64) error
}

// Deps are what the handlers call, one interface per area.
type Deps struct {
	EndUsers EndUsers

	Tickets Tickets

	Messages Messages

	Attachments Attachments

	Feedback Feedback

	Summaries Summaries

	Assistant Assistant
}

// Handlers serve the tickets routes.
type Handlers struct {
	Deps
	s *httpserver.Server
}

// New returns the handlers.
func New(d Deps, s *httpserver.Server) *Handlers { return &Handlers{Deps: d, s: s} }

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ---- End users ----

type endUserRequest struct {
	Name             *string         `json:"name"`
	Email            *string         `json:"email"`
	Phone            *string         `json:"phone"`
	Language         *string         `json:"language"`
	CustomFieldsData json.RawMessage `json:"customFieldsData"`
}

func (r endUserRequest) Input() tickets.EndUserInput {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	return tickets.EndUserInput{Name: str(r.Name), Email: str(r.Email), Phone: str(r.Phone), Language: str(r.Language),
		CustomFields: r.CustomFieldsData}
}

type endUserResponse struct {
	EndUserID        int64           `json:"endUserID"`
	CustomerID       int64           `json:"customerID"`
	Name             string          `json:"name"`
	Email            *string         `json:"email"`
	Phone            *string         `json:"phone"`
	Language         *string         `json:"language"`
	CustomFieldsData json.RawMessage `json:"customFieldsData"`
	DateCreated      time.Time       `json:"dateCreated"`
	DateUpdated      time.Time       `json:"dateUpdated"`
}

func toEndUser(u tickets.EndUser) endUserResponse {
	fields := u.CustomFields
	if len(fields) == 0 {
		fields = json.RawMessage(`{}`)
	}
	return endUserResponse{EndUserID: u.ID, CustomerID: u.CustomerID, Name: u.Name, Email: optional(u.Email),
		Phone: optional(u.Phone), Language: optional(u.Language), CustomFieldsData: fields,
		DateCreated: u.CreatedAt.UTC(), DateUpdated: u.UpdatedAt.UTC()}
}

func (h *Handlers) listEndUsers(c *gin.Context) error {
	return httpcrud.ListPage(c, func(q *httpserver.Query) tickets.EndUserFilter {
		sort, err := tickets.ParseEndUserSort(q.Get("sort"))
		q.Merge(err)
		return tickets.EndUserFilter{Sort: sort, Email: q.Text("email", tickets.MaxQueryLen), Q: q.Text("q", tickets.MaxQueryLen)}
	}, h.EndUsers.ListEndUsers, toEndUser)
}

func (h *Handlers) getEndUser(c *gin.Context) error {
	return httpcrud.GetOne(c, h.EndUsers.EndUser, toEndUser)
}

func (h *Handlers) createEndUser(c *gin.Context) error {
	return httpcrud.CreateOne[endUserRequest](c, "/api/EndUsers", h.EndUsers.CreateEndUser,
		func(u tickets.EndUser) int64 { return u.ID }, toEndUser)
}

func (h *Handlers) updateEndUser(c *gin.Context) error {
	return httpcrud.UpdateOne[endUserRequest](c, h.EndUsers.UpdateEndUser)
}

func (h *Handlers) deleteEndUser(c *gin.Context) error {
	return httpcrud.DeleteOne(c, h.EndUsers.DeleteEndUser)
}
