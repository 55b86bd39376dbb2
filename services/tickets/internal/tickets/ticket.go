package tickets

import (
	"encoding/json"
	"strings"
	"time"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/services/tickets/internal/assistant"
)

// Status is a ticket's state. IsClosed is true exactly when it is Closed.
type Status string

// The ticket states (the service README has the transition table).
const (
	StatusOpen      Status = "Open"
	StatusPending   Status = "Pending"
	StatusEscalated Status = "Escalated"
	StatusResolved  Status = "Resolved"
	StatusClosed    Status = "Closed"
)

// Statuses are every state, in the order the README lists them.
var Statuses = []Status{StatusOpen, StatusPending, StatusEscalated, StatusResolved, StatusClosed}

// ParseStatus accepts a state's name in any case ("open", "CLOSED").
func ParseStatus(s string) (Status, bool) {
	for _, st := range Statuses {
		if strings.EqualFold(s, string(st)) {
			return st, true
		}
	}
	return "", false
}

// transitions[from] lists the states a ticket may move to from "from" by a
// request (PUT, bulk update, escalation). Staying in the same state is
// always allowed. A Closed ticket only reopens.
var transitions = map[Status][]Status{
	StatusOpen:      {StatusPending, StatusEscalated, StatusResolved, StatusClosed},
	StatusPending:   {StatusOpen, StatusEscalated, StatusResolved, StatusClosed},
	StatusEscalated: {StatusOpen, StatusPending, StatusResolved, StatusClosed},
	StatusResolved:  {StatusOpen, StatusEscalated, StatusClosed},
	StatusClosed:    {StatusOpen},
}

// CanTransition tells whether a request may move a ticket from one state to
// another.
func CanTransition(from, to Status) bool {
	if from == to {
		return true
	}
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// TransitionError is the 409 of a move the table does not allow.
func TransitionError(from, to Status) error {
	return &apperr.Error{Code: apperr.Conflict,
		Message: "a " + string(from) + " ticket cannot become " + string(to),
		Fields:  map[string]string{"status": "cannot change from " + string(from) + " to " + string(to)}}
}

// AfterEndUserMessage is the state a new end-user message leaves the ticket
// in: the end user answered, so a ticket waiting on them (Pending) or one
// that was done (Resolved, Closed) is Open again; Open and Escalated stay.
func AfterEndUserMessage(s Status) Status {
	switch s {
	case StatusPending, StatusResolved, StatusClosed:
		return StatusOpen
	}
	return s
}

// Ticket holds the conversation of one issue of an end user.
type Ticket struct {
	ID            int64
	CustomerID    int64
	ChannelID     int64
	EndUserID     int64
	CustomerRepID *int64
	Subject       string
	Status        Status
	// Topics are the names of the topics on the ticket's messages, sorted.
	Topics []string
	// CustomFields is a JSON object (never null).
	CustomFields json.RawMessage
	// Token is the credential of the end user's feedback link.
	Token string
	// SearchConfig is the text search configuration of the conversation
	// (tickets.TextLanguage), "simple" until a language is recognised.
	SearchConfig string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// IsClosed is the spec's isClosed flag.
func (t Ticket) IsClosed() bool { return t.Status == StatusClosed }

// FeedbackComment is an escalation comment on one of the ticket's messages.
type FeedbackComment struct {
	MessageID int64
	Comment   string
	Email     string
	CreatedAt time.Time
}

// SenderType says who wrote a message.
type SenderType string

// The senders of messages.
const (
	SenderEndUser SenderType = "EndUser"
	SenderAgent   SenderType = "Agent"
	SenderAI      SenderType = "AI"
	SenderSystem  SenderType = "System"
)

// SenderTypes are every sender type.
var SenderTypes = []SenderType{SenderEndUser, SenderAgent, SenderAI, SenderSystem}

// ParseSenderType accepts a sender type in any case.
func ParseSenderType(s string) (SenderType, bool) {
	for _, st := range SenderTypes {
		if strings.EqualFold(s, string(st)) {
			return st, true
		}
	}
	return "", false
}

// AIReplyStatus is the state of a message's prepared reply.
type AIReplyStatus string

// The states of a prepared reply.
const (
	AIReplyNone     AIReplyStatus = "none"
	AIReplyPending  AIReplyStatus = "pending"
	AIReplyPrepared AIReplyStatus = "prepared"
	AIReplySent     AIReplyStatus = "sent"
	AIReplyModified AIReplyStatus = "modified"
)

// MessageTopic is a topic on a message.
type MessageTopic struct {
	ID        int64 // ticketMessageTopicID
	TopicID   int64
	TopicName string
}

// Message is one message of a ticket.
type Message struct {
	ID              int64
	CustomerID      int64
	TicketID        int64
	SenderType      SenderType
	SenderAccountID *int64
	Text            string
	Topics          []MessageTopic
	AIReplyText     string
	AIReplyStatus   AIReplyStatus
	AIReplyAt       *time.Time
	// AIReplyProvenance is what prepared the reply (nil when the assistant
	// did not: none, or written by an agent) and AIReplyDocuments the
	// prompt documents it was grounded in.
	AIReplyProvenance *assistant.Provenance
	AIReplyDocuments  []PromptDocument
	// TopicsSource says who set the topics: SourceManual, SourceAuto, or
	// "" while the message never had any.
	TopicsSource string
	CustomFields json.RawMessage
	IsEscalated  bool
	Attachments  int
	// Mail is the mail the message was made from (nil for other messages).
	Mail *MailFacts
	// Delivery is an agent reply's delivery by mail (nil when it is not
	// delivered by mail).
	Delivery  *Delivery
	CreatedAt time.Time
	UpdatedAt time.Time
}

// NewTicket is a ticket to insert, validated.
type NewTicket struct {
	ChannelID     int64
	EndUserID     int64
	CustomerRepID *int64
	Subject       string
	Status        Status
	CustomFields  json.RawMessage // a JSON object
}

// NewMessage is a message to insert into a ticket, validated.
type NewMessage struct {
	SenderType      SenderType
	SenderAccountID *int64
	Text            string
	CustomFields    json.RawMessage // a JSON object
	// Mail is set for a message made from an imported mail.
	Mail *MailFacts
}
