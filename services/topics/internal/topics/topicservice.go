package topics

import (
	"context"
	"fmt"
	"strings"

	"supportplatform.dev/pkg/paging"
)

// TopicStore is what the topic use cases need. Every method is scoped to
// customerID (another customer's ids are NotFound) and sees live topics
// only. A change writes its topic.created/updated/deleted event with it.
type TopicStore interface {
	ListTopics(ctx context.Context, customerID int64, f TopicFilter, p paging.Page) ([]Topic, int, error)
	Topic(ctx context.Context, customerID, id int64) (Topic, error)
	CreateTopic(ctx context.Context, customerID int64, in TopicInput) (Topic, error)
	UpdateTopic(ctx context.Context, customerID, id int64, in TopicInput) (Topic, error)
	DeleteTopic(ctx context.Context, customerID, id int64) (Topic, error)
	TopicNames(ctx context.Context, customerID int64, ids []int64) (map[int64]string, error)
	AllTopics(ctx context.Context, customerID int64) ([]Topic, error)
}

// TopicService is the topic use cases.
type TopicService struct{ store TopicStore }

// NewTopicService returns the topic use cases on store.
func NewTopicService(store TopicStore) *TopicService { return &TopicService{store: store} }

// ListTopics pages through the customer's live topics.
func (s *TopicService) ListTopics(ctx context.Context, customerID int64, f TopicFilter, p paging.Page) ([]Topic, int, error) {
	f.NameContains = strings.TrimSpace(f.NameContains)
	if err := checkFilterText("name", f.NameContains, MaxNameLen); err != nil {
		return nil, 0, err
	}
	return s.store.ListTopics(ctx, customerID, f, p)
}

// Topic returns one live topic.
func (s *TopicService) Topic(ctx context.Context, customerID, id int64) (Topic, error) {
	return s.store.Topic(ctx, customerID, id)
}

// CreateTopic adds a topic; its name is unique (case-insensitively) among the
// customer's live topics.
func (s *TopicService) CreateTopic(ctx context.Context, customerID int64, in TopicInput) (Topic, error) {
	in, err := in.Normalize()
	if err != nil {
		return Topic{}, err
	}
	return s.store.CreateTopic(ctx, customerID, in)
}

// UpdateTopic replaces a topic's name and description.
func (s *TopicService) UpdateTopic(ctx context.Context, customerID, id int64, in TopicInput) (Topic, error) {
	in, err := in.Normalize()
	if err != nil {
		return Topic{}, err
	}
	return s.store.UpdateTopic(ctx, customerID, id, in)
}

// DeleteTopic soft-deletes a topic: from then on it and all its mappings
// match nothing (see the package comment).
func (s *TopicService) DeleteTopic(ctx context.Context, customerID, id int64) error {
	_, err := s.store.DeleteTopic(ctx, customerID, id)
	return err
}

// TopicNames maps the live ones among ids to their names (RPC).
func (s *TopicService) TopicNames(ctx context.Context, customerID int64, ids []int64) (map[int64]string, error) {
	if err := checkLookup(customerID, ids); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return map[int64]string{}, nil
	}
	return s.store.TopicNames(ctx, customerID, ids)
}

// AllTopics lists every live topic of the customer (RPC, AI classification).
func (s *TopicService) AllTopics(ctx context.Context, customerID int64) ([]Topic, error) {
	if err := requireCustomer(customerID); err != nil {
		return nil, err
	}
	return s.store.AllTopics(ctx, customerID)
}

func requireCustomer(customerID int64) error {
	if customerID <= 0 {
		return fieldError("customerID", "must be a positive integer")
	}
	return nil
}

func checkLookup(customerID int64, ids []int64) error {
	if err := requireCustomer(customerID); err != nil {
		return err
	}
	if len(ids) > MaxLookupIDs {
		return fieldError("topicIDs", fmt.Sprintf("must hold at most %d ids", MaxLookupIDs))
	}
	return nil
}
