package importer

import (
	"errors"
	"time"
)

// What an import reads of a mailbox, in the import's own terms: package
// graph adapts Microsoft Graph to Graph (graph.ImportSource).

// Address is a mail address with its display name.
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
	// after it.
	Since time.Time
	// PageSize is the page size asked for (0: the provider's own).
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
	// (References split into its message ids).
	InReplyTo  string
	References []string
	// Headers are every internet message header, by canonical name (only
	// the first of repeated ones).
	Headers map[string]string
	// BodyHTML is the body when the mail's body is HTML ("" for plain
	// text); BodyText is the body as plain text.
	BodyHTML, BodyText string
	HasAttachments     bool
}

// Attachment kinds.
const (
	AttachmentFile      = "fileAttachment"
	AttachmentItem      = "itemAttachment"
	AttachmentReference = "referenceAttachment"
)

// Attachment is one attachment of a message, without its bytes (see
// Graph.AttachmentContent).
type Attachment struct {
	ID, Name, ContentType string
	// Kind is one of the Attachment kinds, or the provider's name of
	// another.
	Kind      string
	Size      int64
	IsInline  bool
	ContentID string
}

// The classes of Graph's failures the import decides by (errors.Is); any
// other failure is transient and fails the round.
var (
	// ErrSyncStateNotFound: the provider no longer knows the delta link;
	// start a full resync.
	ErrSyncStateNotFound = errors.New("delta sync state not found; resync the folder")
	// ErrNotFound: the message or attachment is gone (deleted meanwhile).
	ErrNotFound = errors.New("not found at the provider")
	// ErrRefused: the provider refused the read for good (a 4xx that
	// asking again does not change, not the app's token or rights).
	ErrRefused = errors.New("refused by the provider")
	// ErrReplyTooLarge: the provider's reply exceeds what the client reads.
	ErrReplyTooLarge = errors.New("provider reply too large")
	// ErrMalformedReply: the provider's reply cannot be read.
	ErrMalformedReply = errors.New("provider reply malformed")
)

// ProviderError is a provider's failure with its class (one of the Err
// values above); its text is the cause's.
type ProviderError struct {
	Class error
	Err   error
}

func (e *ProviderError) Error() string   { return e.Err.Error() }
func (e *ProviderError) Unwrap() []error { return []error{e.Class, e.Err} }
