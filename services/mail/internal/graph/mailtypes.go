package graph

import (
	"errors"
	"time"
)

// The mail side of Graph: what the import reads (delta queries, messages,
// attachments) and what the replier writes (reply, sendMail). The calls are
// in messages.go and send.go; ImportSource and ReplySender adapt them to
// the importer's and the replier's terms.

// ErrSyncStateNotFound is a delta link Graph no longer knows (410 Gone, or
// the error code syncStateNotFound / resyncRequired): start a full resync.
var ErrSyncStateNotFound = errors.New("graph: delta sync state not found; resync the folder")

// Address is a mail address with its display name (Graph's emailAddress).
type Address struct {
	Name    string
	Address string
}

// DeltaQuery starts a delta round of one folder's messages.
type DeltaQuery struct {
	// Mailbox is the user's address or id; FolderID the folder's id or a
	// well-known name (inbox).
	Mailbox, FolderID string
	// Since, when not zero, limits a first round to messages received at or
	// after it ($filter=receivedDateTime ge ...).
	Since time.Time
	// PageSize is asked for with Prefer: odata.maxpagesize (0: Graph's own).
	PageSize int
}

// DeltaPage is one page of a delta round: NextLink when more pages follow,
// else DeltaLink, the link of the next round.
type DeltaPage struct {
	Messages  []MessageChange
	NextLink  string
	DeltaLink string
}

// MessageChange is one message of a delta page: an added or changed
// message with the properties the round selected, or a removed one
// (Removed, with only its ID).
type MessageChange struct {
	ID               string
	Removed          bool
	ReceivedDateTime time.Time
	From             Address
	Subject          string
	IsDraft          bool
}

// Message is what a ticket needs of one mail.
type Message struct {
	ID                string
	ReceivedDateTime  time.Time
	Subject           string
	From              Address
	Sender            Address
	To, Cc, ReplyTo   []Address
	InternetMessageID string
	ConversationID    string
	// InReplyTo and References are the mail's headers of those names
	// (References split into its message ids), from internetMessageHeaders.
	InReplyTo  string
	References []string
	// Headers are every internet message header, by canonical name (only
	// the first of repeated ones).
	Headers map[string]string
	// BodyHTML is the body when the mail's body is HTML ("" for plain
	// text); BodyText is the body as plain text (Graph's conversion).
	BodyHTML, BodyText string
	HasAttachments     bool
}

// Attachment kinds (Graph's @odata.type without the prefix).
const (
	AttachmentFile      = "fileAttachment"
	AttachmentItem      = "itemAttachment"
	AttachmentReference = "referenceAttachment"
)

// Attachment is one attachment of a message, without its bytes (see
// AttachmentContent).
type Attachment struct {
	ID, Name, ContentType string
	Kind                  string
	Size                  int64
	IsInline              bool
	ContentID             string
}

// OutgoingMail is a reply or a new mail the platform sends for an agent.
type OutgoingMail struct {
	Subject string
	// Text is the body, sent as plain text.
	Text string
	To   []Address
	// Headers are custom internet message headers (names start with X-),
	// such as the one by which the import worker recognises our own mail.
	Headers map[string]string
}
