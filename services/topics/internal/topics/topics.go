// Package topics is the domain of the topics service: topics, the actions and
// documents they are linked to, and the pages that point at them. Everything
// is scoped to one customer (tenant); another customer's ids are not found.
//
// Deleting a topic is a soft delete: the row keeps its id (tickets refer to
// topic ids) and its mappings are retained, but a deleted topic and every
// mapping of it are invisible to every read, list, lookup and RPC, and no new
// mapping can be made to it. Its name is free for a new topic at once.
//
// Every change is announced by an event (pkg/contracts) that the store
// writes in the change's own transaction (the transactional outbox), so the
// domain knows no bus.
package topics

import "time"

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
	// RequiresConfirmation: the action needs a human, so the assistant's
	// topic detection alone never fires it; an agent assigning (or
	// confirming) the topic does.
	RequiresConfirmation bool
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
	// RequiresConfirmation is the action's flag (Action).
	RequiresConfirmation bool
}

// Service is every use case of the topics service: the HTTP layer serves
// them all. Each use case declares the little it needs of the store, next
// to it; the RPC responders declare what they call of the service.
type Service struct {
	*TopicService
	*TopicActionService
	*TopicDocumentService
	*PageMappingService
	*ActionService
	*DocumentService
}

// Mapping change operations (contracts.MappingChanged.Op).
const (
	OpCreated = "created"
	OpUpdated = "updated"
	OpDeleted = "deleted"
)
