package contracts

// The tickets context (service tickets): end users, tickets and their
// messages.

// End-user events (data EndUserChanged).
const (
	EventEndUserCreated = "end-user.created"
	EventEndUserUpdated = "end-user.updated"
	EventEndUserDeleted = "end-user.deleted"
)

// EndUserChanged is the data of the end-user events: the end user as the
// change left it (as it was, for end-user.deleted).
type EndUserChanged struct {
	EndUserID int64  `json:"endUserID"`
	Name      string `json:"name"`
	Email     string `json:"email,omitempty"`
	Language  string `json:"language,omitempty"`
}

// Ticket and message events. Each carries the customer in the envelope.
const (
	EventTicketCreated = "ticket.created"
	EventTicketUpdated = "ticket.updated"
	EventTicketDeleted = "ticket.deleted"

	EventMessageCreated = "ticket.message.created"
	EventMessageUpdated = "ticket.message.updated"
	EventMessageDeleted = "ticket.message.deleted"
	// EventTopicsAssigned follows every change of a message's topics
	// (PUT .../topics or the assistant's detection).
	EventTopicsAssigned = "ticket.message.topics-assigned"
	// EventTopicDetectionRequested asks the assistant to detect a message's
	// topics (POST .../detect-topics).
	EventTopicDetectionRequested = "ticket.message.topic-detection.requested"
	// EventTopicActionTriggered is the automation of TopicAction: one per
	// active action mapped to a topic just assigned to a message, in
	// priority order.
	EventTopicActionTriggered = "topic.action.triggered"
	EventMessageEscalated     = "message.escalated"
	// EventReplySent: an agent's reply (prepared by the AI or modified) was
	// added to the ticket; the mail context delivers it to the end user.
	EventReplySent = "message.reply.sent"
	// EventReplyDelivered and EventReplyFailed: the mail context delivered
	// a reply by mail, or gave up (data ReplyDelivery).
	EventReplyDelivered = "message.reply.delivered"
	EventReplyFailed    = "message.reply.failed"
	// EventMessageVoted: the end user liked or disliked a message.
	EventMessageVoted = "message.voted"
)

// TicketChanged is the data of ticket.created, .updated and .deleted: the
// ticket as the change left it (as it was, for ticket.deleted).
type TicketChanged struct {
	TicketID       int64  `json:"ticketID"`
	ChannelID      int64  `json:"channelID"`
	EndUserID      int64  `json:"endUserID"`
	CustomerRepID  *int64 `json:"customerRepID"`
	Subject        string `json:"subject"`
	Status         string `json:"status"`
	PreviousStatus string `json:"previousStatus,omitempty"`
	IsClosed       bool   `json:"isClosed"`
}

// MessageChanged is the data of the ticket.message.* events. The text is
// not in the event (it may be long): consumers in the tickets context read
// it from the store, others through the API.
type MessageChanged struct {
	MessageID  int64  `json:"messageID"`
	TicketID   int64  `json:"ticketID"`
	ChannelID  int64  `json:"channelID"`
	EndUserID  int64  `json:"endUserID"`
	SenderType string `json:"senderType"`
	// Language is the detected language of an end-user message's text (ISO
	// 639-1); "" when none was recognised, and for other senders' messages,
	// which are not run through detection.
	Language string `json:"language,omitempty"`
}

// TopicsAssigned is the data of ticket.message.topics-assigned.
type TopicsAssigned struct {
	MessageID int64   `json:"messageID"`
	TicketID  int64   `json:"ticketID"`
	TopicIDs  []int64 `json:"topicIDs"`
	// Source is "manual" (the API) or "auto" (the assistant).
	Source string `json:"source"`
}

// TopicDetectionRequested is the data of
// ticket.message.topic-detection.requested.
type TopicDetectionRequested struct {
	MessageID int64 `json:"messageID"`
	TicketID  int64 `json:"ticketID"`
}

// TopicActionTriggered is the data of topic.action.triggered.
type TopicActionTriggered struct {
	MessageID     int64  `json:"messageID"`
	TicketID      int64  `json:"ticketID"`
	TopicID       int64  `json:"topicID"`
	TopicActionID int64  `json:"topicActionID"`
	ActionID      int64  `json:"actionID"`
	Name          string `json:"name"`
	HookName      string `json:"hookName"`
	Priority      int    `json:"priority"`
	// Source is the assignment that fired it: manual (an agent) or auto
	// (the assistant's detection, which never fires an action that
	// requires confirmation).
	Source string `json:"source"`
	// Confirmed: an agent kept a topic the assistant had detected, and
	// this action, which requires confirmation, fires now.
	Confirmed bool `json:"confirmed,omitempty"`
}

// MessageEscalated is the data of message.escalated.
type MessageEscalated struct {
	MessageID       int64  `json:"messageID"`
	TicketID        int64  `json:"ticketID"`
	FeedbackComment string `json:"feedbackComment"`
	Email           string `json:"email"`
}

// ReplySent is the data of message.reply.sent: the new agent message and
// the message it answers.
type ReplySent struct {
	MessageID   int64  `json:"messageID"`
	InReplyToID int64  `json:"inReplyToID"`
	TicketID    int64  `json:"ticketID"`
	ChannelID   int64  `json:"channelID"`
	EndUserID   int64  `json:"endUserID"`
	Text        string `json:"text"`
	// Modified is true when the agent sent their own text instead of the
	// prepared reply.
	Modified bool `json:"modified"`
	// What the mail context needs to deliver the reply by mail: the
	// ticket's subject, the end user's address, and the provider id of the
	// end user's latest mail in the ticket ("" when the ticket has none:
	// the reply is a new mail then).
	Subject           string      `json:"subject"`
	To                MailAddress `json:"to"`
	ReplyToProviderID string      `json:"replyToProviderID,omitempty"`
	// ReplyToInternetMessageID is that mail's Message-ID, for threading a
	// new mail when replying is not possible.
	ReplyToInternetMessageID string `json:"replyToInternetMessageID,omitempty"`
	// TicketRef is the ticket's reference for the mail's subject,
	// "<ticketID>-<tag>" (written "[#<ticketRef>]"): the tag is an HMAC of
	// the customer and ticket under the tickets secret, so only a subject
	// tickets made names the ticket. "" when the event predates it.
	TicketRef string `json:"ticketRef,omitempty"`
}

// ReplyDelivery is the data of message.reply.delivered and
// message.reply.failed.
type ReplyDelivery struct {
	MessageID int64 `json:"messageID"`
	TicketID  int64 `json:"ticketID"`
	// Attempts made so far; Error is the last failure ("" when delivered).
	Attempts int    `json:"attempts"`
	Error    string `json:"error,omitempty"`
}

// MessageVoted is the data of message.voted.
type MessageVoted struct {
	MessageID int64  `json:"messageID"`
	TicketID  int64  `json:"ticketID"`
	Vote      string `json:"vote"` // like or dislike
}
