package tickets

import (
	"encoding/json"
	"strings"
	"time"

	"supportplatform.dev/pkg/apperr"
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
	// SubjectConfig is set by a change of the subject (UpdateTicket's
	// change): the configuration the new subject is stemmed in
	// (SubjectSearchConfig). The ticket's SearchConfig stays. Not stored:
	// "" on a loaded ticket.
	SubjectConfig string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// IsClosed is the spec's isClosed flag.
func (t Ticket) IsClosed() bool { return t.Status == StatusClosed }

// NewTicket is a ticket to insert, validated.
type NewTicket struct {
	ChannelID     int64
	EndUserID     int64
	CustomerRepID *int64
	Subject       string
	Status        Status
	CustomFields  json.RawMessage // a JSON object
	// SearchConfig is the subject's configuration (SubjectSearchConfig):
	// the ticket's search configuration and the one its subject is
	// stemmed in.
	SearchConfig string
}

// SubjectSearchConfig is the text search configuration a ticket's subject
// is stemmed in (TextLanguage; "simple" when not recognised).
func SubjectSearchConfig(subject string) string {
	_, cfg := TextLanguage(subject)
	return cfg
}

// FeedbackComment is an escalation comment on one of the ticket's messages.
type FeedbackComment struct {
	MessageID int64
	Comment   string
	Email     string
	CreatedAt time.Time
}
