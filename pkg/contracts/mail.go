package contracts

import (
	"encoding/json"
	"strconv"
	"time"
)

// The mail context (mailingest, renewal, importworker).

// MAIL_IMPORT is a work queue of folder imports: one subject per folder, and
// a message id per folder and time bucket so that a burst of provider
// notifications for one folder becomes one import per bucket (JetStream drops
// the repeated ids inside its duplicate window).
const (
	StreamMailImport = "MAIL_IMPORT"
	// MailImportSubjects is what StreamMailImport captures.
	MailImportSubjects = "mail.import.>"
	// MailImportBucket is the coalescing window of import requests.
	MailImportBucket = 2 * time.Second
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
