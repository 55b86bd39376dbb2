// Package importer is the mail import worker's domain: it turns a folder's
// import request (MAIL_IMPORT) into a delta round against the provider and
// one contracts.InboundMail per new mail on MAIL_INBOUND, with the
// attachments' bytes in the BucketMailAttachments Object Store bucket.
//
// Three parts: Round (one delta round of one folder), Runner (one import of
// a folder at a time across every replica, with the "one more run" rule)
// and Worker (the MAIL_IMPORT consumer).
package importer

import (
	"context"
	"io"
	"time"
)

// Graph is what an import needs of Microsoft Graph (graph.ImportSource).
// The client honours Retry-After on 429, refreshes a rejected token once
// and bounds the concurrent calls per mailbox. Failures the import decides
// by are *ProviderError: errors.Is(err, ErrNotFound) for a message or
// attachment that is gone, ErrRefused, ErrReplyTooLarge and
// ErrMalformedReply for one that cannot be imported.
type Graph interface {
	// MessagesDelta returns one page of a delta round: from link when it is
	// not empty (a next or delta link), else the first page of q.
	// errors.Is(err, ErrSyncStateNotFound) when Graph no longer knows the
	// link.
	MessagesDelta(ctx context.Context, tenant string, q DeltaQuery, link string) (DeltaPage, error)
	Message(ctx context.Context, tenant, mailbox, id string) (Message, error)
	Attachments(ctx context.Context, tenant, mailbox, messageID string) ([]Attachment, error)
	AttachmentContent(ctx context.Context, tenant, mailbox, messageID, attachmentID string) (io.ReadCloser, error)
}

// Target is a folder to import with what the import needs of its channel.
type Target struct {
	CustomerID int64
	ChannelID  int64
	FolderID   int64
	// Mailbox is the channel's address (lower-case), TenantID its
	// provider tenant, ExternalFolderID the provider's folder id.
	Mailbox, TenantID, ExternalFolderID string
	// MailboxUserID is the provider's id of the mailbox's user, resolved
	// from the address when the folder's subscription was made ("" until
	// then): Graph's paths take it, not an alias.
	MailboxUserID string
	// Importable is false for a folder that must not be imported: its
	// channel is deleted, is not a Microsoft 365 e-mail channel with a
	// mailbox, or automatic retrieval is off on the channel or the folder.
	Importable bool
	// DeltaLink is the link of the folder's next delta round ("" before
	// the first round, after a resync began, or when the folder now names
	// another mailbox or provider folder than the link was made for).
	DeltaLink string
	// Requests is the folder's import request counter.
	Requests int64
}

// Store is the mail schema as the worker uses it outside a folder's lock.
// Errors are apperr errors: NotFound for a folder that is gone or not the
// customer's.
type Store interface {
	// ImportTarget returns the customer's folder of the channel.
	ImportTarget(ctx context.Context, customerID, channelID, folderID int64) (Target, error)
	// RequestImport bumps the folder's import request counter.
	RequestImport(ctx context.Context, customerID, folderID int64, at time.Time) error
	// ImportRequests returns the folder's import request counter.
	ImportRequests(ctx context.Context, customerID, folderID int64) (int64, error)
}

// Locker takes the one import lock of a folder across every replica.
type Locker interface {
	// TryLockImport returns the folder's lease, or ok false at once when
	// another import holds it.
	TryLockImport(ctx context.Context, customerID, folderID int64) (lease Lease, ok bool, err error)
}

// Lease is a held import lock of one folder and the folder's import state
// read and written under it: a holder that lost its lock can write nothing.
type Lease interface {
	// Load returns the folder (NotFound when it is gone).
	Load(ctx context.Context) (Target, error)
	// ClearDeltaLink forgets the delta link (a resync begins).
	ClearDeltaLink(ctx context.Context) error
	// Succeeded stores the round's delta link and outcome: how many mails
	// it published, and the mails it could not import (counted on the
	// folder, with the last one's reason).
	Succeeded(ctx context.Context, res RoundResult, at time.Time) error
	// Failed records a failed round.
	Failed(ctx context.Context, reason string, at time.Time) error
	// Alive fails once the lock may have been lost.
	Alive(ctx context.Context) error
	// Release gives the lock up; it never fails (a lock it cannot give
	// back goes with its connection).
	Release()
}

// Publisher hands an imported mail on: natsbus.Bus.PublishRaw, which
// returns once the stream has stored it (PubAck).
type Publisher interface {
	PublishRaw(ctx context.Context, base, msgID string, data []byte) error
}

// Blobs keeps attachments' bytes (BucketMailAttachments).
type Blobs interface {
	// Put stores r under key; r's error comes back as it is.
	Put(ctx context.Context, key string, r io.Reader) error
	// Stat returns a complete object's size and SHA-256 (hex), ok false
	// when there is none.
	Stat(ctx context.Context, key string) (size int64, sha256Hex string, ok bool, err error)
}
