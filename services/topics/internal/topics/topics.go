// Package topics is the domain of the topics service: topics, the actions and
// documents they are linked to, and the pages that point at them. Everything
// is scoped to one customer (tenant); another customer's ids are not found.
//
// Deleting a topic is a soft delete: the row keeps its id (tickets refer to
// topic ids) and its mappings are retained, but a deleted topic and every
// mapping of it are invisible to every read, list, lookup and RPC, and no new
// mapping can be made to it. Its name is free for a new topic at once.
package topics

import (
	"context"
	"time"

	"supportplatform.dev/pkg/paging"
)

// Topic classifies tickets and messages.
type Topic struct {
	ID          int64
	CustomerID  int64
	Name        string
	Description string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Action is an automation a topic can trigger (owned here in its minimal form
// until the Hooks API exists).
type Action struct {
	ID         int64
	CustomerID int64
	Name       string
	HookName   string
	ChannelID  *int64 // nil: not tied to a channel
	IsActive   bool
}

// Document is a knowledge-base entry a topic can be linked to.
type Document struct {
	ID         int64
	CustomerID int64
	Title      string
	Content    string
	ChannelID  *int64
	HookName   string
	IsHook     bool
}

// TopicAction links a topic to an action with a priority (lower runs first).
type TopicAction struct {
	ID         int64
	CustomerID int64
	TopicID    int64
	ActionID   int64
	Priority   int
	IsActive   bool
}

// TopicDocument links a topic to a document with a relevance score.
type TopicDocument struct {
	ID             int64
	CustomerID     int64
	TopicID        int64
	DocumentID     int64
	RelevanceScore int
}

// MatchType says how a page mapping's URL pattern is compared.
type MatchType string

// Match types.
const (
	MatchExact  MatchType = "exact"
	MatchPrefix MatchType = "prefix"
)

// PageMapping links a page URL (exact or prefix pattern) to a topic.
type PageMapping struct {
	ID         int64
	CustomerID int64
	TopicID    int64
	URLPattern string
	MatchType  MatchType
}

// LinkedDocument is a document reached through a topic (for prompts).
type LinkedDocument struct {
	DocumentID     int64
	TopicID        int64
	Title          string
	Content        string
	RelevanceScore int
}

// LinkedAction is an active action of a topic (for automation).
type LinkedAction struct {
	TopicActionID int64
	ActionID      int64
	Name          string
	HookName      string
	Priority      int
}

// Store is the persistence the domain needs. Every method is scoped to
// customerID; ids of another customer are NotFound.
type Store interface {
	ListTopics(ctx context.Context, customerID int64, f TopicFilter, p paging.Page) ([]Topic, int, error)
	Topic(ctx context.Context, customerID, id int64) (Topic, error)
	CreateTopic(ctx context.Context, customerID int64, in TopicInput) (Topic, error)
	UpdateTopic(ctx context.Context, customerID, id int64, in TopicInput) (Topic, error)
	DeleteTopic(ctx context.Context, customerID, id int64) (Topic, error)
	TopicNames(ctx context.Context, customerID int64, ids []int64) (map[int64]string, error)
	AllTopics(ctx context.Context, customerID int64) ([]Topic, error)

	ListActions(ctx context.Context, customerID int64, p paging.Page) ([]Action, int, error)
	Action(ctx context.Context, customerID, id int64) (Action, error)
	CreateAction(ctx context.Context, customerID int64, in Action) (Action, error)
	UpdateAction(ctx context.Context, customerID, id int64, in Action) (Action, error)
	// DeleteAction removes the action and its topic mappings, returning them.
	DeleteAction(ctx context.Context, customerID, id int64) ([]TopicAction, error)

	ListDocuments(ctx context.Context, customerID int64, p paging.Page) ([]Document, int, error)
	Document(ctx context.Context, customerID, id int64) (Document, error)
	CreateDocument(ctx context.Context, customerID int64, in Document) (Document, error)
	UpdateDocument(ctx context.Context, customerID, id int64, in Document) (Document, error)
	// DeleteDocument removes the document and its topic mappings, returning them.
	DeleteDocument(ctx context.Context, customerID, id int64) ([]TopicDocument, error)

	ListTopicActions(ctx context.Context, customerID int64, f TopicActionFilter, p paging.Page) ([]TopicAction, int, error)
	TopicAction(ctx context.Context, customerID, id int64) (TopicAction, error)
	// CreateTopicActions inserts all items in one transaction after check has
	// accepted what the store found about their references; all or nothing.
	CreateTopicActions(ctx context.Context, customerID int64, items []NewTopicAction, check func(TopicActionRefs) error) ([]TopicAction, error)
	UpdateTopicActionPriority(ctx context.Context, customerID, id int64, priority int) (TopicAction, error)
	DeleteTopicAction(ctx context.Context, customerID, id int64) (TopicAction, error)
	ActiveActions(ctx context.Context, customerID, topicID int64) ([]LinkedAction, error)

	ListTopicDocuments(ctx context.Context, customerID int64, f TopicDocumentFilter, p paging.Page) ([]TopicDocument, int, error)
	TopicDocument(ctx context.Context, customerID, id int64) (TopicDocument, error)
	CreateTopicDocument(ctx context.Context, customerID int64, in TopicDocument) (TopicDocument, error)
	UpdateTopicDocumentScore(ctx context.Context, customerID, id int64, score int) (TopicDocument, error)
	DeleteTopicDocument(ctx context.Context, customerID, id int64) (TopicDocument, error)
	LinkedDocuments(ctx context.Context, customerID int64, topicIDs []int64, limit int) ([]LinkedDocument, error)

	ListPageMappings(ctx context.Context, customerID int64, f PageMappingFilter, p paging.Page) ([]PageMapping, int, error)
	PageMapping(ctx context.Context, customerID, id int64) (PageMapping, error)
	CreatePageMapping(ctx context.Context, customerID int64, in PageMapping) (PageMapping, error)
	UpdatePageMapping(ctx context.Context, customerID, id int64, in PageMapping) (PageMapping, error)
	DeletePageMapping(ctx context.Context, customerID, id int64) (PageMapping, error)
	// TopicsForURL returns the live topics whose exact patterns equal url and
	// those whose prefix patterns are the longest ones url starts with.
	TopicsForURL(ctx context.Context, customerID int64, url string) ([]Topic, error)
}

// Service implements the use cases.
type Service struct {
	store Store
}

// NewService builds the service.
func NewService(store Store) *Service {
	return &Service{store: store}
}

// Mapping change operations (contracts.MappingChanged.Op).
const (
	OpCreated = "created"
	OpUpdated = "updated"
	OpDeleted = "deleted"
)

func requireCustomer(customerID int64) error {
	if customerID <= 0 {
		return fieldError("customerID", "must be a positive integer")
	}
	return nil
}
