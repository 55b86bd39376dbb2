package contracts

import "time"

// StreamLimits bound what a JetStream stream (or Object Store bucket) may
// hold on the server's disk, which every customer shares. The declaring
// services apply them at every start (CreateOrUpdate), so a changed limit
// reaches existing streams.
//
// The MaxBytes of all of them are reserved against the JetStream account's
// file storage: their sum (StorageReserved) must fit in the account limits
// of the generated nats.conf.
type StreamLimits struct {
	// MaxBytes is the stream's size cap.
	MaxBytes int64
	// MaxMsgs caps the number of messages (-1: none beyond MaxBytes; an
	// Object Store counts chunks).
	MaxMsgs int64
	// MaxMsgSize caps one message (-1: the server's max_payload).
	MaxMsgSize int32
	// MaxAge removes older messages (0: none).
	MaxAge time.Duration
	// DiscardNew refuses new messages when full (the publisher fails and
	// retries later) instead of dropping the oldest: for work queues, whose
	// old messages are work not yet done.
	DiscardNew bool
}

// EventsMaxAge is how long EVENTS keeps an event.
const EventsMaxAge = 7 * 24 * time.Hour

// Limits of the streams and buckets, by base name.
var streamLimits = map[string]StreamLimits{
	// Domain events are small (an outbox row: 1-2 KB); 4 GiB is millions
	// of them. When full the oldest go (consumers are meant to keep up; a
	// limits stream that refused new events would stall every service's
	// outbox).
	StreamEvents: {MaxBytes: 4 << 30, MaxMsgs: -1, MaxMsgSize: 1 << 20, MaxAge: EventsMaxAge},
	// Folder import requests: tiny, coalesced per folder and bucket.
	StreamMailImport: {MaxBytes: 256 << 20, MaxMsgs: 1_000_000, MaxMsgSize: 64 << 10, MaxAge: 24 * time.Hour, DiscardNew: true},
	// Imported mails (bodies cut to MailBodyTextMax + MailBodyHTMLMax).
	StreamMailInbound: {MaxBytes: 2 << 30, MaxMsgs: -1, MaxMsgSize: 1 << 20, MaxAge: MailInboundMaxAge, DiscardNew: true},
	// Attachment bytes of every customer's tickets (each customer is held
	// to its quota, ATTACHMENT_QUOTA_BYTES, besides): the last guard of the
	// server's disk. Raise it with the disk.
	BucketAttachments: {MaxBytes: 16 << 30, MaxMsgs: -1, MaxMsgSize: -1, DiscardNew: true},
	// Imported attachments waiting for tickets to copy them.
	BucketMailAttachments: {MaxBytes: 4 << 30, MaxMsgs: -1, MaxMsgSize: -1, MaxAge: MailInboundMaxAge, DiscardNew: true},
}

// Limits returns the limits of a stream or bucket by its base name
// (StreamEvents, BucketAttachments...); ok is false for a name without.
func Limits(base string) (l StreamLimits, ok bool) {
	l, ok = streamLimits[base]
	return l, ok
}

// LimitedStreams are the base names that have limits, the streams first.
func LimitedStreams() []string {
	return []string{StreamEvents, StreamMailImport, StreamMailInbound, BucketAttachments, BucketMailAttachments}
}

// StorageReserved is the file storage the limited streams reserve together
// (the sum of their MaxBytes).
func StorageReserved() int64 {
	var n int64
	for _, l := range streamLimits {
		n += l.MaxBytes
	}
	return n
}
