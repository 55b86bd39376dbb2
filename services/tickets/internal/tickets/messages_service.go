package tickets

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/pkg/textfield"
)

// Bounds of the message actions.
const (
	MaxFeedbackCommentLen = 2000 // characters
)

// MessageStore is the persistence of messages.
type MessageStore interface {
	ListMessages(ctx context.Context, customerID, ticketID int64, p paging.Page) ([]Message, int, error)
	Message(ctx context.Context, customerID, id int64) (Message, error)
	// AddMessage locks the ticket, calls add and writes the plan;
	// OpenTicketWithMessage inserts t and does the same on it.
	AddMessage(ctx context.Context, customerID, ticketID int64, add func(Ticket) MessagePlan) (Message, error)
	OpenTicketWithMessage(ctx context.Context, customerID int64, t NewTicket, add func(Ticket) MessagePlan) (Message, error)
	// PatchMessage locks the message, calls change and writes the change.
	PatchMessage(ctx context.Context, customerID, id int64, change func(Message) (MessageChange, error)) error
	DeleteMessage(ctx context.Context, customerID, id int64) error
	AssignTopics(ctx context.Context, customerID, id int64, a TopicAssignment) error
	// SendReply and EscalateMessage lock the message and its ticket, call
	// decide and write what it returns.
	SendReply(ctx context.Context, customerID, id int64, decide func(Message, Ticket) (ReplyPlan, error)) (Message, error)
	// MessageChannel is the channel of the ticket of the customer's message.
	MessageChannel(ctx context.Context, customerID, id int64) (int64, error)
	EscalateMessage(ctx context.Context, customerID, id int64, decide func(Message, Ticket) (EscalationPlan, error)) error
	RequestTopicDetection(ctx context.Context, customerID, id int64) error
}

// Messages validates input and calls the store and the lookups.
type Messages struct {
	store  MessageStore
	look   Lookups
	now    func() time.Time
	ranker Ranker
	refs   *Refs
}

// NewMessages returns the message service.
func NewMessages(store MessageStore, look Lookups, now func() time.Time) *Messages {
	return &Messages{store: store, look: look, now: now}
}

// WithRanker makes PromptDocuments rank the documents of a message without
// a prepared reply with r (the API uses the offline engine: cheap and
// local). It returns s.
func (s *Messages) WithRanker(r Ranker) *Messages {
	s.ranker = r
	return s
}

// WithRefs makes send-reply put the ticket's reference, signed by r, into
// message.reply.sent (the subject of the reply by mail). It returns s.
func (s *Messages) WithRefs(r *Refs) *Messages {
	s.refs = r
	return s
}

// CreateMessageInput is POST /api/TicketMessages: a message into the
// ticket TicketID, or (TicketID nil) the first message of a new ticket
// made of the Ticket fields.
type CreateMessageInput struct {
	TicketID *int64
	Message  MessageInput
	Ticket   TicketInput
	// TicketFields names the ticket fields the client sent (they are
	// refused with a TicketID).
	TicketFields []string
}

// ListMessages pages through a ticket's messages, oldest first. A read:
// the store's customer scope is its only rule, so it passes straight on.
func (s *Messages) ListMessages(ctx context.Context, customerID, ticketID int64, p paging.Page) ([]Message, int, error) {
	return s.store.ListMessages(ctx, customerID, ticketID, p)
}

// Message returns one message of the customer (a read, as ListMessages).
func (s *Messages) Message(ctx context.Context, customerID, id int64) (Message, error) {
	return s.store.Message(ctx, customerID, id)
}

// CreateMessage validates and inserts a message; accountID is the caller
// (recorded on an Agent message). Without a ticket id the ticket and its
// message are both validated before either is written, and written in one
// transaction.
func (s *Messages) CreateMessage(ctx context.Context, customerID, accountID int64, in CreateMessageInput) (Message, error) {
	if in.TicketID != nil {
		var v apperr.Validation
		v.Check(*in.TicketID > 0, "ticketID", "must be a positive integer")
		for _, f := range in.TicketFields {
			v.Add(f, "is only for a message that opens a ticket (without ticketID)")
		}
		m, err := ValidateMessage(in.Message, accountID)
		mergeFields(&v, err)
		if err := v.Err(); err != nil {
			return Message{}, err
		}
		return s.store.AddMessage(ctx, customerID, *in.TicketID, MessageInto(m, s.now))
	}
	m, merr := ValidateMessage(in.Message, accountID)
	// The ticket takes the message's customFieldsData too.
	in.Ticket.CustomFields = in.Message.CustomFields
	// ValidateTicket asks for the channel only when the ticket's fields are
	// fine; the field problems of both are reported at once.
	t, terr := ValidateTicket(ctx, s.look, customerID, in.Ticket)
	var v apperr.Validation
	mergeFields(&v, merr)
	if !mergeFields(&v, terr) {
		return Message{}, terr
	}
	if err := v.Err(); err != nil {
		return Message{}, err
	}
	return s.store.OpenTicketWithMessage(ctx, customerID, t, MessageInto(m, s.now))
}

// mergeFields adds the field problems of a validation error to v and
// reports whether err was one (nil counts as one).
func mergeFields(v *apperr.Validation, err error) bool {
	if err == nil {
		return true
	}
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code != apperr.Invalid || len(ae.Fields) == 0 {
		return false
	}
	keys := make([]string, 0, len(ae.Fields))
	for k := range ae.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v.Add(k, ae.Fields[k])
	}
	return true
}

// PatchMessage applies a JSON merge patch (ParseMessagePatch) to the
// message as it is under the store's lock (MessagePatch.Apply).
func (s *Messages) PatchMessage(ctx context.Context, customerID, id int64, p MessagePatch) error {
	return s.store.PatchMessage(ctx, customerID, id, func(m Message) (MessageChange, error) {
		return p.Apply(m, s.now())
	})
}

// DeleteMessage deletes a message with its topics and attachments. Any
// message of the customer may be deleted: no rule to decide.
func (s *Messages) DeleteMessage(ctx context.Context, customerID, id int64) error {
	return s.store.DeleteMessage(ctx, customerID, id)
}

// SetTopics replaces a message's topics (PUT .../topics, source manual).
func (s *Messages) SetTopics(ctx context.Context, customerID, id int64, topicIDs []int64) error {
	return s.AssignTopics(ctx, customerID, id, topicIDs, SourceManual)
}

// AssignTopics replaces a message's topics with topicIDs: each must be a
// live topic of the customer. It writes ticket.message.topics-assigned
// when the list changed, and topic.action.triggered for each active
// action of the topics it added (never again for a topic the message
// already had). The assistant calls it with source auto.
func (s *Messages) AssignTopics(ctx context.Context, customerID, id int64, topicIDs []int64, source string) error {
	if _, err := NormalizeTopicIDs(topicIDs); err != nil {
		return err
	}
	// Another customer's message is a 404 before any topic is looked up.
	if _, err := s.store.Message(ctx, customerID, id); err != nil {
		return err
	}
	a, err := PrepareTopics(ctx, s.look, s.now, customerID, topicIDs, source)
	if err != nil {
		return err
	}
	return s.store.AssignTopics(ctx, customerID, id, a)
}

// ReplyInput sends a message's AI reply as an agent's message.
type ReplyInput struct {
	// ModifiedAnswer is the agent's own text; "" sends the prepared reply.
	ModifiedAnswer string
	AccountID      int64
	// EmailChannelID is the ticket's channel when it is an e-mail channel
	// (0 otherwise): the reply goes out by mail, its delivery is pending.
	EmailChannelID int64
	// Refs makes the ticket's reference of message.reply.sent (nil: none).
	Refs *Refs
}

// ReplyToSend decides what POST .../send-reply sends for message m: the
// modified answer when there is one (the reply becomes modified), else the
// prepared reply (it becomes sent). A reply already sent or modified is a
// 409, so a retried request never sends twice; so is a message without a
// prepared reply when there is no modified answer.
func ReplyToSend(m Message, modifiedAnswer string) (string, AIReplyStatus, error) {
	switch m.AIReply.Status {
	case AIReplySent, AIReplyModified:
		return "", "", &apperr.Error{Code: apperr.Conflict, Message: "the reply to this message was already sent",
			Fields: map[string]string{"aiReply": "was already sent"}}
	}
	if modifiedAnswer != "" {
		return modifiedAnswer, AIReplyModified, nil
	}
	if m.AIReply.Status != AIReplyPrepared || m.AIReply.Text == "" {
		return "", "", &apperr.Error{Code: apperr.Conflict,
			Message: "the message has no prepared reply; send a modifiedAnswer",
			Fields:  map[string]string{"modifiedAnswer": "is required when no reply is prepared"}}
	}
	return m.AIReply.Text, AIReplySent, nil
}

// SendReply sends the message's prepared reply or the modified answer as
// a new Agent message of the ticket (written by accountID).
func (s *Messages) SendReply(ctx context.Context, customerID, accountID, id int64, modifiedAnswer *string) (Message, error) {
	in := ReplyInput{AccountID: accountID, Refs: s.refs}
	if modifiedAnswer != nil {
		in.ModifiedAnswer = strings.TrimSpace(*modifiedAnswer)
		var v apperr.Validation
		textfield.Multiline(&v, "modifiedAnswer", in.ModifiedAnswer, false, MaxMessageLen)
		if err := v.Err(); err != nil {
			return Message{}, err
		}
	}
	// A reply in a ticket of an e-mail channel goes out by mail: its
	// delivery is pending from the start. PlanReply checks the channel is
	// still the ticket's under the store's lock.
	channelID, err := s.store.MessageChannel(ctx, customerID, id)
	if err != nil {
		return Message{}, err
	}
	ch, err := s.look.Channel(ctx, customerID, channelID)
	if err != nil {
		return Message{}, err
	}
	if ch.Exists && !ch.IsDeleted && ch.Kind == ChannelKindEmail {
		in.EmailChannelID = channelID
	}
	return s.store.SendReply(ctx, customerID, id, func(m Message, t Ticket) (ReplyPlan, error) {
		return PlanReply(m, t, in, s.now())
	})
}

// ChannelKindEmail is the kind of the mail context's e-mail channels.
const ChannelKindEmail = "email"

// Escalation is a validated escalation of a message.
type Escalation struct {
	Comment string
	Email   string // lower-case
}

// ValidateEscalation checks the body of POST .../escalate.
func ValidateEscalation(comment, email string) (Escalation, error) {
	var v apperr.Validation
	e := Escalation{Comment: strings.TrimSpace(comment)}
	textfield.Multiline(&v, "feedbackComment", e.Comment, true, MaxFeedbackCommentLen)
	email = strings.TrimSpace(email)
	if email == "" {
		v.Add("email", "is required")
	} else if addr, ok := textfield.Email(email); ok {
		e.Email = addr
	} else {
		v.Add("email", "must be one e-mail address without a display name (name@example.com)")
	}
	return e, v.Err()
}

// Escalate marks the message escalated and its ticket Escalated, and adds
// the comment to the ticket's aiFeedbackComments.
func (s *Messages) Escalate(ctx context.Context, customerID, id int64, comment, email string) error {
	e, err := ValidateEscalation(comment, email)
	if err != nil {
		return err
	}
	return s.store.EscalateMessage(ctx, customerID, id, func(_ Message, t Ticket) (EscalationPlan, error) {
		return PlanEscalation(t, e, s.now())
	})
}

// DetectTopics asks the assistant to detect the message's topics: an
// event for any message of the customer, no rule to decide.
func (s *Messages) DetectTopics(ctx context.Context, customerID, id int64) error {
	return s.store.RequestTopicDetection(ctx, customerID, id)
}
