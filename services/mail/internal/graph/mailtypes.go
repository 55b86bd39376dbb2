package graph

import (
	"errors"

	"supportplatform.dev/services/mail/internal/importer"
)

// The mail side of Graph: what the import reads (delta queries, messages,
// attachments) and what the replier writes (reply, sendMail). The calls are
// in messages.go and send.go; ImportSource and ReplySender adapt them to
// the importer's and the replier's terms.

// ErrSyncStateNotFound is a delta link Graph no longer knows (410 Gone, or
// the error code syncStateNotFound / resyncRequired): start a full resync.
var ErrSyncStateNotFound = errors.New("graph: delta sync state not found; resync the folder")

// The import's types are the client's: Graph's JSON is decoded into them
// (messages.go), so ImportSource only classifies the errors.
type (
	// Address is a mail address with its display name (Graph's
	// emailAddress).
	Address = importer.Address
	// DeltaQuery starts a delta round of one folder's messages: Since is
	// sent as $filter=receivedDateTime ge ..., PageSize as Prefer:
	// odata.maxpagesize.
	DeltaQuery = importer.DeltaQuery
	// DeltaPage is one page of a delta round.
	DeltaPage = importer.DeltaPage
	// MessageChange is one message of a delta page.
	MessageChange = importer.MessageChange
	// Message is what a ticket needs of one mail: InReplyTo and References
	// come from internetMessageHeaders, BodyText is Graph's conversion.
	Message = importer.Message
	// Attachment is one attachment of a message, without its bytes; Kind is
	// Graph's @odata.type without the prefix.
	Attachment = importer.Attachment
)

// Attachment kinds (Graph's @odata.type without the prefix).
const (
	AttachmentFile      = importer.AttachmentFile
	AttachmentItem      = importer.AttachmentItem
	AttachmentReference = importer.AttachmentReference
)

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
