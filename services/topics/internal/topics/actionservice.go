package topics

import (
	"context"

	"supportplatform.dev/pkg/paging"
)

// ActionStore is what the action use cases need, scoped to customerID.
type ActionStore interface {
	ListActions(ctx context.Context, customerID int64, p paging.Page) ([]Action, int, error)
	Action(ctx context.Context, customerID, id int64) (Action, error)
	CreateAction(ctx context.Context, customerID int64, in Action) (Action, error)
	UpdateAction(ctx context.Context, customerID, id int64, in Action) (Action, error)
	// DeleteAction removes the action and its topic mappings, returning them
	// (a topic.action.changed event, deleted, for each).
	DeleteAction(ctx context.Context, customerID, id int64) ([]TopicAction, error)
}

// ActionService is the action use cases.
type ActionService struct{ store ActionStore }

// NewActionService returns the action use cases on store.
func NewActionService(store ActionStore) *ActionService { return &ActionService{store: store} }

// ListActions pages through the customer's actions.
func (s *ActionService) ListActions(ctx context.Context, customerID int64, p paging.Page) ([]Action, int, error) {
	return s.store.ListActions(ctx, customerID, p)
}

// Action returns one action.
func (s *ActionService) Action(ctx context.Context, customerID, id int64) (Action, error) {
	return s.store.Action(ctx, customerID, id)
}

// CreateAction adds an action.
func (s *ActionService) CreateAction(ctx context.Context, customerID int64, in ActionInput) (Action, error) {
	a, err := in.Normalize()
	if err != nil {
		return Action{}, err
	}
	return s.store.CreateAction(ctx, customerID, a)
}

// UpdateAction replaces an action's fields.
func (s *ActionService) UpdateAction(ctx context.Context, customerID, id int64, in ActionInput) (Action, error) {
	a, err := in.Normalize()
	if err != nil {
		return Action{}, err
	}
	return s.store.UpdateAction(ctx, customerID, id, a)
}

// DeleteAction deletes an action and with it its topic mappings.
func (s *ActionService) DeleteAction(ctx context.Context, customerID, id int64) error {
	_, err := s.store.DeleteAction(ctx, customerID, id)
	return err
}
