package tickets

import (
	"time"

	"supportplatform.dev/pkg/contracts"
)

// MailFacts are what a message made from an imported mail keeps of the
// mail (the API's "mail" object).
type MailFacts struct {
	// ChannelID is the channel (mailbox) the mail came in through.
	ChannelID int64
	// ProviderMessageID is the provider's immutable id of the mail: one
	// message per (customer, channel, provider message id).
	ProviderMessageID string
	InternetMessageID string
	ConversationID    string
	InReplyTo         string
	From              contracts.MailAddress
	To                []contracts.MailAddress
	Cc                []contracts.MailAddress
	Subject           string
	ReceivedAt        time.Time
	// HTML is the sanitised HTML body ("" for a plain-text mail).
	HTML string
	// Truncated: the text or HTML body was cut (by the import worker, or to
	// MaxMessageLen here).
	Truncated bool
	// Skipped are the mail's attachments that were not stored.
	Skipped []SkippedAttachment
}

// SkippedAttachment is an attachment of a mail that is not among the
// message's attachments, and why.
type SkippedAttachment struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	Reason string `json:"reason"`
}

// Reasons an attachment of a mail was not stored (besides the import
// worker's own, passed on as it gives them).
const (
	SkipTooLarge = "too-large"   // over ATTACHMENT_MAX_BYTES
	SkipMissing  = "missing"     // its bytes were gone from the import bucket
	SkipChecksum = "checksum"    // the bytes did not match the mail's SHA-256
	SkipNoBytes  = "not-carried" // the import worker sent no bytes and no reason
	// SkipQuota (quota.go): the customer's attachment quota was full.
)

// MailImport is a mail ready for the store: validated and cleaned (package
// mailin prepares it), its attachments' bytes already copied.
type MailImport struct {
	CustomerID int64
	// Sender becomes (or is found as) the end user: Address is bare and
	// lower-case, Name 1 to MaxNameLen characters.
	Sender contracts.MailAddress
	// Subject of a new ticket (one line, 1 to MaxSubjectLen characters).
	Subject string
	// Text is the message's text (the mail's new text).
	Text string
	Mail MailFacts
	// ThreadIDs are the Message-IDs the mail answers, most relevant first:
	// In-Reply-To, then References newest first.
	ThreadIDs []string
	// SubjectTicketID is the ticket a valid reference in the subject
	// ("[#123-<tag>]", Refs.Find) names (0: none). The mail joins it only
	// when its sender may (MayJoinBySubject).
	SubjectTicketID int64
	// Mailbox is the address of the channel's mailbox ("" when unknown).
	Mailbox string
	// Attachments have their bytes in the blob store under Key (reserved in
	// blob_garbage); their MessageID is set by the store.
	Attachments []Attachment
	// QuotaBytes caps the customer's attachment bytes: attachments that do
	// not fit fail the import with CheckQuota's error (ErrQuota; the store
	// gets the check as ImportDecisions' Fits).
	QuotaBytes int64
}

// MailOutcome is what an import did.
type MailOutcome string

// The outcomes of an import (label values of the import metric).
const (
	MailNewTicket MailOutcome = "new-ticket"
	MailJoined    MailOutcome = "joined-ticket"
	MailDuplicate MailOutcome = "duplicate"
	MailRejected  MailOutcome = "rejected"
)

// MailImported is the result of an import: the message made from the mail
// (for a duplicate, the one made earlier) and its ticket.
type MailImported struct {
	Outcome   MailOutcome
	TicketID  int64
	MessageID int64
}

// Delivery states of an agent reply sent by mail.
const (
	DeliveryPending = "pending"
	DeliverySent    = "sent"
	DeliveryFailed  = "failed"
)

// Delivery is the state of an agent reply's delivery by mail.
type Delivery struct {
	Status   string
	Attempts int
	Error    string
	// UpdatedAt is when the state was reached (the report's occurredAt).
	UpdatedAt time.Time
}
