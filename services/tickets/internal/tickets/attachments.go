package tickets

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/blob"
	"supportplatform.dev/pkg/randid"
)

// Attachment is a file attached to a message. Its bytes are in the blob
// store under Key; the rest is metadata in the database.
type Attachment struct {
	ID          int64
	CustomerID  int64
	MessageID   int64
	FileName    string
	ContentType string // sniffed from the first 512 bytes, never the client's
	Size        int64
	SHA256      string // hex
	Key         string
	CreatedAt   time.Time
}

// Bounds and defaults of attachments.
const (
	// DefaultMaxAttachmentBytes is ATTACHMENT_MAX_BYTES's default (25 MiB).
	DefaultMaxAttachmentBytes = 25 << 20
	// MaxFileNameBytes bounds a stored file name (UTF-8 bytes).
	MaxFileNameBytes = 255
	// DefaultFileName replaces a file name that is empty once cleaned.
	DefaultFileName = "attachment"
	// sniffLen is what http.DetectContentType looks at.
	sniffLen = 512
)

// AttachmentStore is the metadata of attachments and the list of blob keys
// whose bytes are to be deleted (blob_garbage).
type AttachmentStore interface {
	// ReserveBlob lists key as garbage due at due, before its bytes are
	// written; NotFound when the message is not the customer's.
	ReserveBlob(ctx context.Context, customerID, messageID int64, key string, due time.Time) error
	// AddAttachment stores the metadata and takes the key off the garbage
	// list in one transaction; Unavailable when the key is no longer
	// listed (the sweeper has taken it: the upload took too long).
	// fits decides on the customer's attachment bytes with a, read under
	// the lock (QuotaFits: else its error, and nothing is stored).
	AddAttachment(ctx context.Context, a Attachment, fits func(used, size int64) error) (Attachment, error)
	// AttachmentUsage is the bytes of the customer's attachments.
	AttachmentUsage(ctx context.Context, customerID int64) (int64, error)
	// ReserveBlobs lists keys as garbage due at due, for bytes written
	// before their message exists (the mail import).
	ReserveBlobs(ctx context.Context, keys []string, due time.Time) error
	// DiscardBlobs makes listed keys due at once.
	DiscardBlobs(ctx context.Context, keys []string) error
	Attachments(ctx context.Context, customerID, messageID int64) ([]Attachment, error)
	Attachment(ctx context.Context, customerID, messageID, id int64) (Attachment, error)
	// DeleteAttachment deletes the metadata; a trigger lists the key as
	// garbage due at once.
	DeleteAttachment(ctx context.Context, customerID, messageID, id int64) error
	// SweepBlobs takes up to limit due keys, locked so that replicas share
	// the work, calls del for each, and forgets those del removed. It stops
	// at del's first error and returns it with the count forgotten.
	SweepBlobs(ctx context.Context, limit int, del func(ctx context.Context, key string) error) (int, error)
}

// Blobs hold the bytes (package blob: a JetStream Object Store).
type Blobs interface {
	// Put stores r's bytes under a new key; on error nothing is kept and
	// r's own error comes back unchanged.
	Put(ctx context.Context, key string, r io.Reader) error
	// Open reads the bytes of key (NotFound when there are none).
	Open(ctx context.Context, key string) (io.ReadCloser, int64, error)
	// Delete removes key's bytes; a missing key is no error.
	Delete(ctx context.Context, key string) error
}

// AttachmentOptions configure Attachments.
type AttachmentOptions struct {
	// MaxBytes is the size cap of one file (ATTACHMENT_MAX_BYTES).
	MaxBytes int64
	// QuotaBytes caps the bytes of one customer's attachments
	// (ATTACHMENT_QUOTA_BYTES; default DefaultAttachmentQuota).
	QuotaBytes int64
	// GarbageDelay is when an upload's bytes may be collected if its
	// metadata was never stored: a little longer than any request runs
	// (REQUEST_TIMEOUT), so the sweeper never takes a live upload's key.
	GarbageDelay time.Duration
	// SweepInterval is the time between the sweeper's rounds; a deletion
	// through this service also wakes it at once.
	SweepInterval time.Duration
	// SweepBatch is how many keys one transaction of the sweeper takes.
	SweepBatch int
	Now        func() time.Time
	Log        *slog.Logger
}

// Attachments stores, serves and deletes message attachments.
type Attachments struct {
	store AttachmentStore
	blobs Blobs
	o     AttachmentOptions
	wake  chan struct{}
}

// NewAttachments returns the attachment service.
func NewAttachments(store AttachmentStore, blobs Blobs, o AttachmentOptions) *Attachments {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxAttachmentBytes
	}
	if o.QuotaBytes <= 0 {
		o.QuotaBytes = DefaultAttachmentQuota
	}
	if o.SweepInterval <= 0 {
		o.SweepInterval = 30 * time.Second
	}
	if o.SweepBatch <= 0 {
		o.SweepBatch = 100
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Attachments{store: store, blobs: blobs, o: o, wake: make(chan struct{}, 1)}
}

// MaxBytes is the size cap of one file.
func (s *Attachments) MaxBytes() int64 { return s.o.MaxBytes }

// QuotaBytes is the cap of one customer's attachment bytes.
func (s *Attachments) QuotaBytes() int64 { return s.o.QuotaBytes }

// Usage is the bytes of the customer's attachments.
func (s *Attachments) Usage(ctx context.Context, customerID int64) (int64, error) {
	return s.store.AttachmentUsage(ctx, customerID)
}

// Upload streams body into the blob store and stores the attachment of the
// customer's message: the type sniffed from the first bytes, the SHA-256
// and size counted on the way, the file name cleaned (CleanFileName). Over
// MaxBytes it is a TooLarge error and nothing is kept. The customer's
// attachment quota is checked before a byte is stored, with declared (the
// request's size, an upper bound of the file's; <= 0 when unknown), and
// again with the file's size when its metadata is stored (CheckQuota's
// error; the bytes go at once). body's errors come back as they are (the
// HTTP layer makes them client errors).
func (s *Attachments) Upload(ctx context.Context, customerID, messageID int64, fileName string, declared int64, body io.Reader) (Attachment, error) {
	used, err := s.store.AttachmentUsage(ctx, customerID)
	if err != nil {
		return Attachment{}, err
	}
	if err := CheckQuota(used, s.o.QuotaBytes, max(declared, 0)); err != nil {
		return Attachment{}, err
	}
	key := fmt.Sprintf("%d_%d_%s", customerID, messageID, randid.Hex(16))
	// Listed as garbage before a byte is written: whatever happens next,
	// the bytes are either described by metadata or collected.
	if err := s.store.ReserveBlob(ctx, customerID, messageID, key, s.o.Now().Add(s.o.GarbageDelay)); err != nil {
		return Attachment{}, err
	}
	a, err := s.Write(ctx, key, fileName, body)
	if err != nil {
		return Attachment{}, err
	}
	a.CustomerID, a.MessageID = customerID, messageID
	stored, err := s.store.AddAttachment(ctx, a, QuotaFits(s.o.QuotaBytes))
	if errors.Is(err, ErrQuota) {
		// Another upload took the room meanwhile: the bytes go now.
		if derr := s.Discard(context.WithoutCancel(ctx), []string{key}); derr != nil {
			s.o.Log.WarnContext(ctx, "attachments: discarding an upload over the quota failed", "error", derr.Error())
		}
	}
	return stored, err
}

// ReserveKeys returns n new keys for the customer's attachments of a
// message that does not exist yet (the mail import, which copies the bytes
// before the message's transaction), listed as garbage due at due before
// any byte is written. The transaction that stores their metadata takes
// them off the list; Discard gives up on them.
func (s *Attachments) ReserveKeys(ctx context.Context, customerID int64, n int, due time.Time) ([]string, error) {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%d_mail_%s", customerID, randid.Hex(16))
	}
	return keys, s.store.ReserveBlobs(ctx, keys, due)
}

// Discard makes reserved keys due at once and wakes the sweeper, which
// deletes whatever bytes were written under them.
func (s *Attachments) Discard(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	if err := s.store.DiscardBlobs(ctx, keys); err != nil {
		return err
	}
	s.Wake()
	return nil
}

// Write streams body into the blob store under key, a key already listed
// as garbage (ReserveBlob, ReserveKeys), and returns the attachment's
// metadata without its customer and message: the type sniffed from the
// first 512 bytes (an empty file is application/octet-stream), the
// SHA-256 and size counted on the way, the file name cleaned. Over MaxBytes
// it is a TooLarge error and nothing is kept; body's errors come back as
// they are. Every attachment's bytes, uploaded or imported from a mail,
// take this path.
func (s *Attachments) Write(ctx context.Context, key, fileName string, body io.Reader) (Attachment, error) {
	head := make([]byte, sniffLen)
	n, err := blob.Fill(body, head)
	if err != nil && err != io.EOF {
		return Attachment{}, err
	}
	head = head[:n]
	contentType := "application/octet-stream"
	if n > 0 {
		contentType = http.DetectContentType(head)
	}
	var rest io.Reader = bytes.NewReader(head)
	if err == nil {
		rest = io.MultiReader(rest, body)
	}
	m := &meter{r: rest, max: s.o.MaxBytes, h: sha256.New()}
	if err := s.blobs.Put(ctx, key, m); err != nil {
		return Attachment{}, err
	}
	return Attachment{FileName: CleanFileName(fileName), ContentType: contentType,
		Size: m.n, SHA256: hex.EncodeToString(m.h.Sum(nil)), Key: key}, nil
}

// meter counts and hashes what passes and fails once more than max bytes
// have passed.
type meter struct {
	r   io.Reader
	max int64
	n   int64
	h   hash.Hash
}

func (m *meter) Read(p []byte) (int, error) {
	// Read one byte more than allowed to tell "exactly max" from "over".
	if room := m.max - m.n + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := m.r.Read(p)
	m.n += int64(n)
	if m.n > m.max {
		return 0, apperr.E(apperr.TooLarge, "the file is larger than %d bytes", m.max)
	}
	m.h.Write(p[:n])
	return n, err
}

// Attachments lists the attachments of the customer's message, oldest
// first.
func (s *Attachments) Attachments(ctx context.Context, customerID, messageID int64) ([]Attachment, error) {
	return s.store.Attachments(ctx, customerID, messageID)
}

// Open returns an attachment of the customer's message and a reader of its
// bytes, which the caller closes.
func (s *Attachments) Open(ctx context.Context, customerID, messageID, id int64) (Attachment, io.ReadCloser, error) {
	a, err := s.store.Attachment(ctx, customerID, messageID, id)
	if err != nil {
		return a, nil, err
	}
	r, size, err := s.blobs.Open(ctx, a.Key)
	if apperr.Is(err, apperr.NotFound) {
		// Deleted since the metadata was read.
		return a, nil, apperr.E(apperr.NotFound, "attachment not found")
	}
	if err != nil {
		return a, nil, err
	}
	if size != a.Size {
		_ = r.Close()
		return a, nil, fmt.Errorf("attachment %d: %d bytes stored, %d described", a.ID, size, a.Size)
	}
	return a, r, nil
}

// Delete deletes an attachment of the customer's message; its bytes go in
// the sweeper's next round, which this starts.
func (s *Attachments) Delete(ctx context.Context, customerID, messageID, id int64) error {
	if err := s.store.DeleteAttachment(ctx, customerID, messageID, id); err != nil {
		return err
	}
	s.Wake()
	return nil
}

// Wake starts a sweep now (a no-op when one is pending).
func (s *Attachments) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Sweep deletes the bytes of every due garbage key, batch by batch, and
// returns how many it deleted. It stops at the first blob store error.
func (s *Attachments) Sweep(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := s.store.SweepBlobs(ctx, s.o.SweepBatch, s.blobs.Delete)
		total += n
		if err != nil || n < s.o.SweepBatch {
			return total, err
		}
	}
}

// RunSweeper sweeps every SweepInterval, and when woken, until ctx ends.
// Several replicas may run it: each batch's rows are locked (SKIP LOCKED).
func (s *Attachments) RunSweeper(ctx context.Context) {
	t := time.NewTicker(s.o.SweepInterval)
	defer t.Stop()
	for {
		n, err := s.Sweep(ctx)
		if err != nil && ctx.Err() == nil {
			s.o.Log.Warn("attachments: sweep of deleted blobs failed; retried next round", "error", err.Error(), "deleted", n)
		} else if n > 0 {
			s.o.Log.Debug("attachments: deleted blobs", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
		}
	}
}

// CleanFileName is the name a file is stored and served under: the
// client's base name (anything up to the last / or \ dropped), without
// control and formatting characters (bidirectional overrides included) and
// invalid UTF-8, trimmed, at most MaxFileNameBytes bytes of UTF-8 (cut at
// a character boundary); "." and ".." and what ends up empty become
// DefaultFileName.
func CleanFileName(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.ToValidUTF8(name, "")
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if len(name) > MaxFileNameBytes {
		cut := MaxFileNameBytes
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = strings.TrimSpace(name[:cut])
	}
	if name == "" || name == "." || name == ".." {
		return DefaultFileName
	}
	return name
}
