// Package tickets is the domain of the tickets context: end users (the
// customer's own customers, who write in), their tickets and the tickets'
// messages. Everything is scoped to one customer (tenant); another
// customer's ids are not found.
//
// An end user's e-mail address is optional but unique within the customer,
// ignoring case (it is stored in lower case): the mail import finds or
// creates end users by address. An end user with tickets cannot be deleted.
package tickets

import (
	"context"
	"encoding/json"
	"time"

	"supportplatform.dev/pkg/paging"
)

// EndUser is a person who contacts the customer's support.
type EndUser struct {
	ID         int64
	CustomerID int64
	Name       string
	Email      string // lower-case; "" when none
	Phone      string // "" when none
	Language   string // normalised ISO 639 code; "" when none
	// CustomFields is a JSON object (never null).
	CustomFields json.RawMessage
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// EndUserInput creates or replaces an end user.
type EndUserInput struct {
	Name     string
	Email    string
	Phone    string
	Language string
	// CustomFields is the raw JSON the client sent; nil or null means {}.
	CustomFields json.RawMessage
}

// EndUserSort orders a list of end users; the id breaks ties.
type EndUserSort struct {
	By   string // SortByID, SortByName or SortByCreated
	Desc bool
}

// Sort keys of end users.
const (
	SortByID      = "endUserID"
	SortByName    = "name"
	SortByCreated = "dateCreated"
)

// EndUserFilter selects end users.
type EndUserFilter struct {
	// Email matches the address exactly, ignoring case.
	Email string
	// Q matches a substring of the name, address or phone, ignoring case.
	Q    string
	Sort EndUserSort
}

// EndUserStore is the persistence the service needs.
type EndUserStore interface {
	ListEndUsers(ctx context.Context, customerID int64, f EndUserFilter, p paging.Page) ([]EndUser, int, error)
	EndUser(ctx context.Context, customerID, id int64) (EndUser, error)
	CreateEndUser(ctx context.Context, customerID int64, in EndUserInput) (EndUser, error)
	UpdateEndUser(ctx context.Context, customerID, id int64, in EndUserInput) (EndUser, error)
	DeleteEndUser(ctx context.Context, customerID, id int64) (EndUser, error)
}

// EndUsers validates input and calls the store.
type EndUsers struct{ store EndUserStore }

// NewEndUsers returns the end-user service.
func NewEndUsers(store EndUserStore) *EndUsers { return &EndUsers{store: store} }

// ListEndUsers pages through the customer's end users.
func (s *EndUsers) ListEndUsers(ctx context.Context, customerID int64, f EndUserFilter, p paging.Page) ([]EndUser, int, error) {
	return s.store.ListEndUsers(ctx, customerID, f, p)
}

// EndUser returns one end user of the customer.
func (s *EndUsers) EndUser(ctx context.Context, customerID, id int64) (EndUser, error) {
	return s.store.EndUser(ctx, customerID, id)
}

// CreateEndUser validates and inserts an end user.
func (s *EndUsers) CreateEndUser(ctx context.Context, customerID int64, in EndUserInput) (EndUser, error) {
	in, err := in.Normalize()
	if err != nil {
		return EndUser{}, err
	}
	return s.store.CreateEndUser(ctx, customerID, in)
}

// UpdateEndUser validates and replaces an end user.
func (s *EndUsers) UpdateEndUser(ctx context.Context, customerID, id int64, in EndUserInput) (EndUser, error) {
	in, err := in.Normalize()
	if err != nil {
		return EndUser{}, err
	}
	return s.store.UpdateEndUser(ctx, customerID, id, in)
}

// DeleteEndUser deletes an end user without tickets.
func (s *EndUsers) DeleteEndUser(ctx context.Context, customerID, id int64) error {
	_, err := s.store.DeleteEndUser(ctx, customerID, id)
	return err
}
