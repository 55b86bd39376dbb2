package tickets

import (
	"encoding/json"
	"strings"
	"time"

	"supportplatform.dev/services/tickets/internal/assistant"
)

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
	// TopicsSource says who set the topics: SourceManual, SourceAuto, or
	// "" while the message never had any.
	TopicsSource string
	CustomFields json.RawMessage
	IsEscalated  bool
	Attachments  int
	CreatedAt    time.Time
	UpdatedAt    time.Time
	// AIReply is the reply prepared to the message.
	AIReply AIReply
	// Mail is the mail the message was made from (nil for other messages).
	Mail *MailFacts
	// Delivery is an agent reply's delivery by mail (nil when it is not
	// delivered by mail).
	Delivery *Delivery
}

// AIReply is the reply prepared to a message, by the assistant or an
// agent, and what became of it.
type AIReply struct {
	Text   string
	Status AIReplyStatus
	// CreatedAt is when the reply was prepared (nil without one).
	CreatedAt *time.Time
	// Provenance is what prepared the reply (nil when the assistant did
	// not: none, or written by an agent) and Documents the prompt
	// documents it was grounded in.
	Provenance *assistant.Provenance
	Documents  []PromptDocument
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
