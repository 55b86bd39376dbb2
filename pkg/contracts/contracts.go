// Package contracts is the one place where NATS subjects, JetStream stream
// names and the payloads that cross service boundaries are defined.
//
// Every name is derived through Names so a deployment (or a test) can isolate
// itself with a prefix: prefix "t1" turns subject "events.topic.deleted" into
// "t1.events.topic.deleted" and stream "EVENTS" into "T1_EVENTS".
package contracts

import (
	"strings"
	"time"
)

// Names derives prefixed subjects and stream names, and carries the
// replica count of the deployment's streams (StreamReplicas).
type Names struct {
	Prefix string
	// Replicas is NATS_REPLICAS: the copies every stream and bucket keeps
	// (replicas.go); zero is DefaultReplicas.
	Replicas int
}

// Subject returns the full subject for a base subject.
func (n Names) Subject(base string) string {
	if n.Prefix == "" {
		return base
	}
	return n.Prefix + "." + base
}

// Stream returns the full stream (or durable consumer) name for a base name.
func (n Names) Stream(base string) string {
	if n.Prefix == "" {
		return base
	}
	return strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(n.Prefix)) + "_" + base
}

// Streams.
const (
	// StreamEvents holds domain events for automation and background AI work.
	StreamEvents = "EVENTS"
	// EventsSubjects is what StreamEvents captures.
	EventsSubjects = "events.>"
)

// EventSubject is the subject an event type is published on.
func EventSubject(eventType string) string { return "events." + eventType }

// Event types.
const (
	EventPasswordResetRequested = "auth.password-reset.requested"
	EventPasswordChanged        = "auth.password.changed"
	EventTopicCreated           = "topic.created"
	EventTopicUpdated           = "topic.updated"
	EventTopicDeleted           = "topic.deleted"
	EventTopicActionChanged     = "topic.action.changed"
	EventTopicDocumentChanged   = "topic.document.changed"
	EventPageMappingChanged     = "topic.page-mapping.changed"
)

// Event is the envelope of everything on StreamEvents.
type Event[T any] struct {
	ID         string    `json:"id"`
	Type       string    `json:"type"`
	CustomerID int64     `json:"customerID"`
	OccurredAt time.Time `json:"occurredAt"`
	Data       T         `json:"data"`
}

// PasswordResetRequested records that a reset was requested for an account.
// It never carries the token: auth mails the link itself, and every service
// may read the EVENTS stream's auth events only through contracts.Services.
type PasswordResetRequested struct {
	AccountID int64     `json:"accountID"`
	Email     string    `json:"email"`
	Name      string    `json:"name"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// PasswordChanged tells other parts that earlier tokens are void.
type PasswordChanged struct {
	AccountID int64 `json:"accountID"`
}

// TopicChanged is the data of topic.created/updated/deleted.
type TopicChanged struct {
	TopicID     int64  `json:"topicID"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// MappingChanged is the data of the mapping change events.
type MappingChanged struct {
	Op        string `json:"op"` // created, updated, deleted
	MappingID int64  `json:"mappingID"`
	TopicID   int64  `json:"topicID"`
	TargetID  int64  `json:"targetID"` // actionID, documentID or 0 for page mappings
}

// Request/reply subjects (core NATS, queue groups).
const (
	RPCTopicNames     = "rpc.topics.names"
	RPCTopicsAll      = "rpc.topics.all"
	RPCTopicDocuments = "rpc.topics.documents"
	RPCTopicActions   = "rpc.topics.actions"
	RPCCustomerExists = "rpc.auth.customer-exists"
	QueueTopics       = "topics"
	QueueAuth         = "auth"
)

// CustomerExistsRequest asks auth whether a customer (tenant) still exists.
type CustomerExistsRequest struct {
	CustomerID int64 `json:"customerID"`
}

// CustomerExistsReply answers CustomerExistsRequest.
type CustomerExistsReply struct {
	Exists bool `json:"exists"`
}

// TopicNamesRequest asks for the names of topics by id.
type TopicNamesRequest struct {
	CustomerID int64   `json:"customerID"`
	TopicIDs   []int64 `json:"topicIDs"`
}

// TopicNamesReply maps existing topic ids to names; unknown ids are absent.
type TopicNamesReply struct {
	Names map[int64]string `json:"names"`
}

// TopicsAllRequest asks for every topic of a customer (AI classification).
type TopicsAllRequest struct {
	CustomerID int64 `json:"customerID"`
}

// TopicSummary is a topic with its description.
type TopicSummary struct {
	TopicID     int64  `json:"topicID"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// TopicsAllReply answers TopicsAllRequest.
type TopicsAllReply struct {
	Topics []TopicSummary `json:"topics"`
}

// TopicDocumentsRequest asks for the documents linked to topics.
type TopicDocumentsRequest struct {
	CustomerID int64   `json:"customerID"`
	TopicIDs   []int64 `json:"topicIDs"`
	Limit      int     `json:"limit,omitempty"`
}

// LinkedDocument is a document linked to a topic, with its relevance.
type LinkedDocument struct {
	DocumentID     int64  `json:"documentID"`
	TopicID        int64  `json:"topicID"`
	Title          string `json:"title"`
	Content        string `json:"content"`
	RelevanceScore int    `json:"relevanceScore"`
}

// TopicDocumentsReply lists documents ordered by relevance, highest first.
type TopicDocumentsReply struct {
	Documents []LinkedDocument `json:"documents"`
}

// TopicActionsRequest asks for the active actions of a topic.
type TopicActionsRequest struct {
	CustomerID int64 `json:"customerID"`
	TopicID    int64 `json:"topicID"`
}

// LinkedAction is an active action mapped to a topic.
type LinkedAction struct {
	TopicActionID int64  `json:"topicActionID"`
	ActionID      int64  `json:"actionID"`
	Name          string `json:"name"`
	HookName      string `json:"hookName"`
	Priority      int    `json:"priority"`
	// RequiresConfirmation: the action needs a human; topic detection
	// alone never fires it (tickets).
	RequiresConfirmation bool `json:"requiresConfirmation,omitempty"`
}

// TopicActionsReply lists actions by priority (lowest number first).
type TopicActionsReply struct {
	Actions []LinkedAction `json:"actions"`
}
