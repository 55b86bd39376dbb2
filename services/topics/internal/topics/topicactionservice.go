package topics

import (
	"context"
	"strings"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/paging"
)

// TopicActionStore is what the topic-action use cases need, scoped to
// customerID; mappings of deleted topics are not found. A change writes a
// topic.action.changed event per mapping with it.
type TopicActionStore interface {
	ListTopicActions(ctx context.Context, customerID int64, f TopicActionFilter, p paging.Page) ([]TopicAction, int, error)
	TopicAction(ctx context.Context, customerID, id int64) (TopicAction, error)
	// CreateTopicActions inserts all items in one transaction after check has
	// accepted what the store found about their references; all or nothing.
	CreateTopicActions(ctx context.Context, customerID int64, items []NewTopicAction, check func(TopicActionRefs) error) ([]TopicAction, error)
	UpdateTopicActionPriority(ctx context.Context, customerID, id int64, priority int) (TopicAction, error)
	DeleteTopicAction(ctx context.Context, customerID, id int64) (TopicAction, error)
	ActiveActions(ctx context.Context, customerID, topicID int64) ([]LinkedAction, error)
}

// TopicActionService is the topic-action use cases.
type TopicActionService struct{ store TopicActionStore }

// NewTopicActionService returns the topic-action use cases on store.
func NewTopicActionService(store TopicActionStore) *TopicActionService {
	return &TopicActionService{store: store}
}

// ListTopicActions pages through the mappings of live topics, ordered by
// topic and then priority.
func (s *TopicActionService) ListTopicActions(ctx context.Context, customerID int64, f TopicActionFilter, p paging.Page) ([]TopicAction, int, error) {
	f.HookName = strings.TrimSpace(f.HookName)
	if err := checkFilterText("hookName", f.HookName, MaxHookNameLen); err != nil {
		return nil, 0, err
	}
	return s.store.ListTopicActions(ctx, customerID, f, p)
}

// TopicAction returns one mapping of a live topic.
func (s *TopicActionService) TopicAction(ctx context.Context, customerID, id int64) (TopicAction, error) {
	return s.store.TopicAction(ctx, customerID, id)
}

// CreateTopicAction maps an action to a topic.
func (s *TopicActionService) CreateTopicAction(ctx context.Context, customerID int64, in TopicActionInput) (TopicAction, error) {
	var v apperr.Validation
	item := in.validate(&v)
	if err := v.Err(); err != nil {
		return TopicAction{}, err
	}
	items := []NewTopicAction{item}
	created, err := s.store.CreateTopicActions(ctx, customerID, items, func(r TopicActionRefs) error {
		return CheckTopicActionRefs(items, r, false)
	})
	if err != nil {
		return TopicAction{}, err
	}
	return created[0], nil
}

// CreateTopicActions maps several actions in one transaction: all or none.
func (s *TopicActionService) CreateTopicActions(ctx context.Context, customerID int64, in []TopicActionInput) ([]TopicAction, error) {
	items, err := ValidateTopicActions(in)
	if err != nil {
		return nil, err
	}
	return s.store.CreateTopicActions(ctx, customerID, items, func(r TopicActionRefs) error {
		return CheckTopicActionRefs(items, r, true)
	})
}

// UpdateTopicActionPriority changes only the priority of a mapping.
func (s *TopicActionService) UpdateTopicActionPriority(ctx context.Context, customerID, id int64, priority *int64) error {
	var v apperr.Validation
	checkRange(&v, "priority", priority, MinPriority, MaxPriority)
	if err := v.Err(); err != nil {
		return err
	}
	_, err := s.store.UpdateTopicActionPriority(ctx, customerID, id, int(*priority))
	return err
}

// DeleteTopicAction removes a mapping.
func (s *TopicActionService) DeleteTopicAction(ctx context.Context, customerID, id int64) error {
	_, err := s.store.DeleteTopicAction(ctx, customerID, id)
	return err
}

// ActiveActions returns the active mappings to active actions of a live
// topic, lowest priority number first (RPC, automation).
func (s *TopicActionService) ActiveActions(ctx context.Context, customerID, topicID int64) ([]LinkedAction, error) {
	if err := requireCustomer(customerID); err != nil {
		return nil, err
	}
	if topicID <= 0 {
		return nil, fieldError("topicID", "must be a positive integer")
	}
	return s.store.ActiveActions(ctx, customerID, topicID)
}
