package contracts

import (
	"encoding/json"
	"strconv"
	"time"
)

// The mail context (mailingest, renewal, importreply).

// MAIL_IMPORT is a work queue of folder imports: one subject per folder, and
// a message id per folder and time bucket so that a burst of provider
// notifications for one folder becomes one import per bucket (JetStream drops
// the repeated ids inside its duplicate window).
const (
	StreamMailImport = "MAIL_IMPORT"
	// MailImportSubjects is what StreamMailImport captures.
	MailImportSubjects = "mail.import.>"
	// MailImportBucket is the coalescing window of import requests. The
	// worker starts an import at the end of its bucket, so the bucket is
	// also the most a new mail waits before its delta query: a quarter
	// second keeps mail-to-ticket well under a second while a burst of
	// notifications for one folder still makes at most four requests a
	// second (and the worker folds requests that come during an import
	// into one more run).
	MailImportBucket = 250 * time.Millisecond
	// MailImportDuplicates is the stream's duplicate window; longer than a
	// bucket so that every repeat inside one is dropped.
	MailImportDuplicates = time.Minute
)

// MailImportSubject is the subject of a folder's import requests.
func MailImportSubject(folderID int64) string {
	return "mail.import." + strconv.FormatInt(folderID, 10)
}

// Reasons of an import request.
const (
	ImportNotification = "notification" // the provider notified new mail
	ImportCatchUp      = "catch-up"     // a new or re-created subscription: mail that came meanwhile
	ImportMissed       = "missed"       // the provider's lifecycle event "missed"
)

// MailImportMsgID is the message id of an import request: requests for one
// folder in one bucket share it. Catch-up requests carry their own reason so
// that a notification in the same bucket does not swallow them.
func MailImportMsgID(folderID int64, reason string, at time.Time) string {
	bucket := at.UnixNano() / int64(MailImportBucket)
	return "import." + strconv.FormatInt(folderID, 10) + "." + reason + "." + strconv.FormatInt(bucket, 10)
}

// MailImportRequest asks the import worker to import a folder's new mail
// (a delta query from the folder's stored delta link).
type MailImportRequest struct {
	CustomerID int64  `json:"customerID"`
	ChannelID  int64  `json:"channelID"`
	FolderID   int64  `json:"folderID"`
	Reason     string `json:"reason"`
	// NotBefore is the end of the request's bucket: the worker starts the
	// import no earlier, so that every notification coalesced into this
	// request was received before the delta query runs and none of their
	// mail can be missed by it.
	NotBefore   time.Time `json:"notBefore"`
	RequestedAt time.Time `json:"requestedAt"`
}

// MailImportMessage is the JetStream message of an import request: its
// subject, its message id (folder, reason, bucket) and its payload, with
// NotBefore set from RequestedAt. The queue publishes it directly; the
// mail store writes catch-up requests to its outbox with it.
func MailImportMessage(r MailImportRequest) (subject, msgID string, data []byte, err error) {
	r.NotBefore = MailImportNotBefore(r.RequestedAt)
	data, err = json.Marshal(r)
	return MailImportSubject(r.FolderID), MailImportMsgID(r.FolderID, r.Reason, r.RequestedAt), data, err
}

// MailImportNotBefore is the end of the bucket at holds.
func MailImportNotBefore(at time.Time) time.Time {
	return at.Truncate(MailImportBucket).Add(MailImportBucket)
}

// Channel events.
const (
	EventChannelCreated = "channel.created"
	EventChannelUpdated = "channel.updated"
	EventChannelDeleted = "channel.deleted"
)

// ChannelChanged is the data of the channel events.
type ChannelChanged struct {
	ChannelID          int64  `json:"channelID"`
	Name               string `json:"name"`
	Kind               string `json:"kind"`
	EmailAddress       string `json:"emailAddress,omitempty"`
	Provider           string `json:"provider"`
	AutoRetrieveEmails bool   `json:"autoRetrieveEmails"`
	IsDeleted          bool   `json:"isDeleted"`
}

// Channel lookups.
const (
	RPCChannel = "rpc.mail.channel"
	QueueMail  = "mail"
)

// ChannelRequest asks for a customer's channel by id.
type ChannelRequest struct {
	CustomerID int64 `json:"customerID"`
	ChannelID  int64 `json:"channelID"`
}

// ChannelReply answers ChannelRequest. Exists is false for an unknown id and
// for another customer's channel; a soft-deleted channel exists with
// IsDeleted true.
type ChannelReply struct {
	Exists       bool   `json:"exists"`
	ChannelID    int64  `json:"channelID,omitempty"`
	Name         string `json:"name,omitempty"`
	Kind         string `json:"kind,omitempty"`
	IsDeleted    bool   `json:"isDeleted"`
	EmailAddress string `json:"emailAddress,omitempty"`
}

// MAIL_INBOUND carries one message per imported mail from the import worker
// to tickets, which turns it into a ticket or a message of its ticket.
const (
	StreamMailInbound = "MAIL_INBOUND"
	// MailInboundSubjects is what StreamMailInbound captures.
	MailInboundSubjects = "mail.inbound.>"
	// MailInboundDuplicates is the stream's duplicate window: a mail
	// published again inside it (a re-run import, a resync) is dropped by
	// its message id. Tickets' unique (channel, provider message id) covers
	// what comes later.
	MailInboundDuplicates = 2 * time.Hour
	// MailInboundMaxAge bounds how long an unconsumed mail waits for tickets.
	MailInboundMaxAge = 7 * 24 * time.Hour
)

// MailInboundSubject is the subject of a channel's imported mail.
func MailInboundSubject(channelID int64) string {
	return "mail.inbound." + strconv.FormatInt(channelID, 10)
}

// MailInboundMsgID is the message id of an imported mail: the provider's
// immutable message id, qualified by the channel (two customers may connect
// the same mailbox, each as a channel of its own).
func MailInboundMsgID(channelID int64, providerMessageID string) string {
	return "mail." + strconv.FormatInt(channelID, 10) + "." + providerMessageID
}

// BucketMailAttachments is the Object Store bucket where the import worker
// puts the bytes of imported mails' attachments; tickets reads them into its
// own bucket. Objects expire after MailInboundMaxAge.
const BucketMailAttachments = "MAIL_ATTACHMENTS"

// Size bounds of an InboundMail (the message must stay well under NATS's
// 1 MB payload): longer bodies are cut at a rune boundary and Truncated set.
const (
	MailBodyTextMax = 256 << 10
	MailBodyHTMLMax = 512 << 10
)

// MailAddress is a mail's address with its display name.
type MailAddress struct {
	Name    string `json:"name,omitempty"`
	Address string `json:"address"`
}

// InboundAttachment is an imported mail's attachment. Its bytes are the
// object Object in BucketMailAttachments; Object is "" when they were not
// carried (Skipped says why: over the tickets service's size cap, an item
// or reference attachment, ...).
type InboundAttachment struct {
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256,omitempty"`
	Object      string `json:"object,omitempty"`
	IsInline    bool   `json:"isInline,omitempty"`
	ContentID   string `json:"contentID,omitempty"`
	Skipped     string `json:"skipped,omitempty"`
}

// InboundMail is one imported mail on StreamMailInbound.
type InboundMail struct {
	CustomerID int64 `json:"customerID"`
	ChannelID  int64 `json:"channelID"`
	FolderID   int64 `json:"folderID"`
	// Mailbox is the channel's address the mail was imported from.
	Mailbox string `json:"mailbox"`
	// ProviderMessageID is Graph's immutable message id (case-sensitive).
	ProviderMessageID string `json:"providerMessageID"`
	// InternetMessageID is the mail's Message-ID header, with its angle
	// brackets; InReplyTo and References name earlier mails the same way.
	InternetMessageID string   `json:"internetMessageID,omitempty"`
	InReplyTo         string   `json:"inReplyTo,omitempty"`
	References        []string `json:"references,omitempty"`
	// ConversationID is the provider's thread id.
	ConversationID string        `json:"conversationID,omitempty"`
	Subject        string        `json:"subject"`
	From           MailAddress   `json:"from"`
	To             []MailAddress `json:"to,omitempty"`
	Cc             []MailAddress `json:"cc,omitempty"`
	ReceivedAt     time.Time     `json:"receivedAt"`
	// BodyText is the body as plain text (the provider's conversion of an
	// HTML body); BodyHTML the HTML body as the mail has it, unsanitised
	// ("" for a plain-text mail).
	BodyText    string              `json:"bodyText"`
	BodyHTML    string              `json:"bodyHTML,omitempty"`
	Truncated   bool                `json:"truncated,omitempty"`
	Attachments []InboundAttachment `json:"attachments,omitempty"`
	ImportedAt  time.Time           `json:"importedAt"`
}
