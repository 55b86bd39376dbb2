// Package httpapi is the HTTP layer of the tickets service: it decodes
// requests, calls the domain and maps results to response types whose JSON
// names are the spec's.
package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/authn"
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

// Handlers serve the tickets routes.
type Handlers struct {
	endUsers EndUsers
	s        *httpserver.Server
}

// New returns the handlers.
func New(endUsers EndUsers, s *httpserver.Server) *Handlers {
	return &Handlers{endUsers: endUsers, s: s}
}

// customer returns the caller's customer id (the tenant every call is
// scoped to).
func customer(c *gin.Context) (int64, error) {
	p, err := authn.Must(c.Request.Context())
	if err != nil {
		return 0, err
	}
	return p.CustomerID, nil
}

func customerAndID(c *gin.Context) (customerID, id int64, err error) {
	if customerID, err = customer(c); err != nil {
		return 0, 0, err
	}
	id, err = httpserver.PathID(c)
	return customerID, id, err
}

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

func (r endUserRequest) input() tickets.EndUserInput {
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
	cid, err := customer(c)
	if err != nil {
		return err
	}
	q := httpserver.NewQuery(c)
	pg := q.Page()
	sort, err := tickets.ParseEndUserSort(q.Get("sort"))
	q.Merge(err)
	f := tickets.EndUserFilter{Sort: sort, Email: q.Text("email", tickets.MaxQueryLen), Q: q.Text("q", tickets.MaxQueryLen)}
	if err := q.Err(); err != nil {
		return err
	}
	items, total, err := h.endUsers.ListEndUsers(c.Request.Context(), cid, f, pg)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, paging.NewEnvelope(paging.Map(items, toEndUser), total, pg))
	return nil
}

func (h *Handlers) getEndUser(c *gin.Context) error {
	cid, id, err := customerAndID(c)
	if err != nil {
		return err
	}
	u, err := h.endUsers.EndUser(c.Request.Context(), cid, id)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, toEndUser(u))
	return nil
}

func (h *Handlers) createEndUser(c *gin.Context) error {
	cid, err := customer(c)
	if err != nil {
		return err
	}
	var req endUserRequest
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	u, err := h.endUsers.CreateEndUser(c.Request.Context(), cid, req.input())
	if err != nil {
		return err
	}
	c.Header("Location", "/api/EndUsers/"+strconv.FormatInt(u.ID, 10))
	c.JSON(http.StatusCreated, toEndUser(u))
	return nil
}

func (h *Handlers) updateEndUser(c *gin.Context) error {
	cid, id, err := customerAndID(c)
	if err != nil {
		return err
	}
	var req endUserRequest
	if err := httpserver.BindJSON(c, &req); err != nil {
		return err
	}
	if _, err := h.endUsers.UpdateEndUser(c.Request.Context(), cid, id, req.input()); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}

func (h *Handlers) deleteEndUser(c *gin.Context) error {
	cid, id, err := customerAndID(c)
	if err != nil {
		return err
	}
	if err := h.endUsers.DeleteEndUser(c.Request.Context(), cid, id); err != nil {
		return err
	}
	c.Status(http.StatusNoContent)
	return nil
}
