package tickets

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
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
	AddMessage(ctx context.Context, customerID, ticketID int64, in NewMessage) (Message, error)
	OpenTicketWithMessage(ctx context.Context, customerID int64, t NewTicket, m NewMessage) (Message, error)
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
		return s.store.AddMessage(ctx, customerID, *in.TicketID, m)
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
	return s.store.OpenTicketWithMessage(ctx, customerID, t, m)
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

// PromptDocument is knowledge-base context for answering a message.
type PromptDocument struct {
	DocumentID int64
	Title      string
	Content    string
	// Score is the document's similarity to the message, in [0, 1] (0
	// when it was ordered by the links' relevance alone).
	Score float64
}

// MessagePatch is a validated JSON merge patch (RFC 7396) of a message.
type MessagePatch struct {
	// Text replaces the message's text when not nil.
	Text *string
	// SetAIReply: AIReplyText replaces the reply's text (the reply becomes
	// prepared), or with nil clears it (status none).
	SetAIReply  bool
	AIReplyText *string
	// CustomFields is merged into customFieldsData when not nil (RFC 7396:
	// null members remove keys; a null patch empties it).
	CustomFields json.RawMessage
}

// ParseMessagePatch reads a merge patch of a message. Member names match
// case-insensitively; only message, aiReply.text and customFieldsData may
// be patched: any other member is a 400 naming it.
func ParseMessagePatch(body []byte) (MessagePatch, error) {
	var p MessagePatch
	members, ok := objectMembers(body)
	if !ok {
		return p, apperr.E(apperr.Invalid, "a merge patch of a message must be a JSON object")
	}
	var v apperr.Validation
	seen := map[string]bool{}
	for _, mb := range members {
		name := strings.ToLower(mb.name)
		if seen[name] {
			v.Add(mb.name, "is given more than once")
			continue
		}
		seen[name] = true
		switch name {
		case "message":
			var s *string
			if json.Unmarshal(mb.value, &s) != nil || s == nil {
				v.Add("message", "must be a string (it cannot be removed)")
				continue
			}
			text := strings.TrimSpace(*s)
			textfield.Multiline(&v, "message", text, true, MaxMessageLen)
			p.Text = &text
		case "aireply":
			parseAIReplyPatch(&v, &p, mb.value)
		case "customfieldsdata":
			if isNull(mb.value) {
				p.CustomFields = json.RawMessage(`null`)
				continue
			}
			if _, ok := objectMembers(mb.value); !ok {
				v.Add("customFieldsData", "must be a JSON object or null")
				continue
			}
			p.CustomFields = append(json.RawMessage(nil), mb.value...)
		default:
			v.Add(mb.name, "cannot be changed (only message, aiReply.text and customFieldsData)")
		}
	}
	return p, v.Err()
}

func parseAIReplyPatch(v *apperr.Validation, p *MessagePatch, raw json.RawMessage) {
	if isNull(raw) {
		p.SetAIReply = true
		return
	}
	members, ok := objectMembers(raw)
	if !ok {
		v.Add("aiReply", "must be an object ({\"text\": ...}) or null")
		return
	}
	seen := false
	for _, mb := range members {
		if !strings.EqualFold(mb.name, "text") {
			v.Add("aiReply."+mb.name, "cannot be changed (only aiReply.text)")
			continue
		}
		if seen {
			v.Add("aiReply.text", "is given more than once")
			continue
		}
		seen = true
		p.SetAIReply = true
		if isNull(mb.value) {
			continue
		}
		var s string
		if json.Unmarshal(mb.value, &s) != nil {
			v.Add("aiReply.text", "must be a string or null")
			continue
		}
		s = strings.TrimSpace(s)
		if s == "" {
			v.Add("aiReply.text", "must not be empty (null clears the reply)")
			continue
		}
		textfield.Multiline(v, "aiReply.text", s, true, MaxMessageLen)
		p.AIReplyText = &s
	}
}

type member struct {
	name  string
	value json.RawMessage
}

// objectMembers returns the members of a JSON object in order (duplicates
// kept), or false when raw is not an object.
func objectMembers(raw json.RawMessage) ([]member, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		name, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, false
		}
		out = append(out, member{name: name, value: value})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	return out, true
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// MessageChange is what a patch leaves of a message.
type MessageChange struct {
	Text          string
	TextChanged   bool
	AIReplyText   string
	AIReplyStatus AIReplyStatus
	AIReplyAt     *time.Time
	CustomFields  json.RawMessage
	// Changed is false when the patch changes nothing.
	Changed bool
	// SearchConfig and Language are the text's (TextLanguage): a new text
	// is indexed again in SearchConfig, and ticket.message.updated carries
	// Language.
	SearchConfig, Language string
	// ReplyByHand: an agent wrote or cleared the reply, so it is no
	// engine's any more (its provenance goes).
	ReplyByHand bool
}

// Apply applies the patch to m (now dates a newly prepared reply). A
// reply that was already sent or modified cannot be changed (409).
func (p MessagePatch) Apply(m Message, now time.Time) (MessageChange, error) {
	c := MessageChange{Text: m.Text, AIReplyText: m.AIReply.Text, AIReplyStatus: m.AIReply.Status, AIReplyAt: m.AIReply.CreatedAt,
		CustomFields: m.CustomFields}
	if p.Text != nil && *p.Text != m.Text {
		c.Text, c.TextChanged, c.Changed = *p.Text, true, true
	}
	if p.SetAIReply {
		if m.AIReply.Status == AIReplySent || m.AIReply.Status == AIReplyModified {
			return c, &apperr.Error{Code: apperr.Conflict, Message: "the reply to this message was already sent",
				Fields: map[string]string{"aiReply.text": "cannot change after the reply was sent"}}
		}
		if p.AIReplyText == nil {
			if m.AIReply.Status != AIReplyNone || m.AIReply.Text != "" {
				c.AIReplyText, c.AIReplyStatus, c.AIReplyAt, c.Changed = "", AIReplyNone, nil, true
			}
		} else if *p.AIReplyText != m.AIReply.Text || m.AIReply.Status != AIReplyPrepared {
			at := now
			c.AIReplyText, c.AIReplyStatus, c.AIReplyAt, c.Changed = *p.AIReplyText, AIReplyPrepared, &at, true
		}
	}
	if p.CustomFields != nil {
		merged, err := MergePatch(m.CustomFields, p.CustomFields)
		if err != nil {
			return c, apperr.Field("customFieldsData", "must be a JSON object or null", "invalid customFieldsData")
		}
		fields, msg := normalizeCustomFields(merged)
		if msg != "" {
			return c, apperr.Field("customFieldsData", msg, "invalid customFieldsData")
		}
		if !jsonEqual(fields, m.CustomFields) {
			c.CustomFields, c.Changed = fields, true
		}
	}
	if c.Changed {
		c.Language, c.SearchConfig = TextLanguage(c.Text)
		c.ReplyByHand = c.AIReplyText != m.AIReply.Text || c.AIReplyStatus != m.AIReply.Status
	}
	return c, nil
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// MergePatch applies an RFC 7396 merge patch to target (absent or invalid
// target counts as null): an object patch sets its members recursively and
// removes those that are null; any other patch replaces the target. The
// result is compact JSON; numbers keep their text.
func MergePatch(target, patch json.RawMessage) (json.RawMessage, error) {
	var t, p any
	if len(bytes.TrimSpace(target)) > 0 {
		if err := decodeNumbers(target, &t); err != nil {
			t = nil
		}
	}
	if err := decodeNumbers(patch, &p); err != nil {
		return nil, err
	}
	return json.Marshal(mergeValue(t, p))
}

func decodeNumbers(raw json.RawMessage, v *any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}

func mergeValue(target, patch any) any {
	po, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	to, ok := target.(map[string]any)
	if !ok {
		to = map[string]any{}
	}
	keys := make([]string, 0, len(po))
	for k := range po {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if po[k] == nil {
			delete(to, k)
			continue
		}
		to[k] = mergeValue(to[k], po[k])
	}
	return to
}
