package importer

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/blob"
	"supportplatform.dev/pkg/contracts"
)

// Why an attachment's bytes were not carried (InboundAttachment.Skipped).
const (
	SkippedTooLarge  = "too-large"            // over ATTACHMENT_MAX_BYTES
	SkippedItem      = "item-attachment"      // an attached mail, event or contact
	SkippedReference = "reference-attachment" // a link to a file in OneDrive or SharePoint
	SkippedGone      = "gone"                 // deleted at the provider meanwhile
	// SkippedUnavailable: Graph refused the bytes for good (a 4xx the
	// mail's import does not stop for).
	SkippedUnavailable = "unavailable"
)

// ObjectKey is the BucketMailAttachments key of one attachment's bytes: a
// hash of channel, message and attachment ids (the ids are long and may
// hold characters a key may not), so a repeated import finds its object.
func ObjectKey(channelID int64, messageID, attachmentID string) string {
	sum := sha256.Sum256([]byte(strconv.FormatInt(channelID, 10) + "\x00" + messageID + "\x00" + attachmentID))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// attachments lists the mail's attachments and carries the bytes of the
// file attachments within the cap into the bucket.
func (im *Importer) attachments(ctx context.Context, t Target, messageID string) ([]contracts.InboundAttachment, error) {
	list, err := im.o.Graph.Attachments(ctx, t.TenantID, t.mailboxKey(), messageID)
	if err != nil {
		return nil, err
	}
	out := make([]contracts.InboundAttachment, 0, len(list))
	for _, a := range list {
		in := contracts.InboundAttachment{Name: a.Name, ContentType: a.ContentType, Size: a.Size,
			IsInline: a.IsInline, ContentID: a.ContentID}
		switch {
		case a.Kind == AttachmentItem:
			in.Skipped = SkippedItem
		case a.Kind == AttachmentReference:
			in.Skipped = SkippedReference
		case a.Kind != AttachmentFile:
			in.Skipped = strings.ToLower(a.Kind)
		case a.Size > im.o.AttachmentMaxBytes:
			in.Skipped = SkippedTooLarge
		default:
			if err := im.carry(ctx, t, messageID, a, &in); err != nil {
				if _, ok := permanent(err); !ok {
					return nil, fmt.Errorf("attachment %s: %w", a.ID, err)
				}
				in.Skipped = SkippedUnavailable
			}
		}
		im.o.Metrics.attachment(in.Skipped)
		out = append(out, in)
	}
	return out, nil
}

// errTooLarge stops an upload whose bytes exceed the cap whatever Graph
// declared.
var errTooLarge = errors.New("attachment over the size cap")

// carry streams one file attachment's bytes into the bucket, computing
// their size and SHA-256; an object a previous round stored is reused.
func (im *Importer) carry(ctx context.Context, t Target, messageID string, a Attachment, in *contracts.InboundAttachment) error {
	key := ObjectKey(t.ChannelID, messageID, a.ID)
	size, sum, ok, err := im.o.Blobs.Stat(ctx, key)
	if err != nil {
		return err
	}
	if ok {
		in.Size, in.SHA256, in.Object = size, sum, key
		return nil
	}
	rc, err := im.o.Graph.AttachmentContent(ctx, t.TenantID, t.mailboxKey(), messageID, a.ID)
	if errors.Is(err, ErrNotFound) {
		in.Skipped = SkippedGone
		return nil
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	cr := &countingReader{r: rc, h: sha256.New(), max: im.o.AttachmentMaxBytes}
	err = im.o.Blobs.Put(ctx, key, cr)
	if errors.Is(err, errTooLarge) {
		in.Skipped = SkippedTooLarge
		return nil
	}
	if err != nil {
		return err
	}
	in.Size, in.SHA256, in.Object = cr.n, hex.EncodeToString(cr.h.Sum(nil)), key
	return nil
}

// countingReader hashes and counts what passes and fails past max bytes.
type countingReader struct {
	r   io.Reader
	h   hash.Hash
	n   int64
	max int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	if c.n > c.max {
		return n, errTooLarge
	}
	return n, err
}

// ObjectBlobs is Blobs on the JetStream Object Store (pkg/blob).
type ObjectBlobs struct {
	store *blob.ObjectStore
	obs   jetstream.ObjectStore
}

// OpenBlobs opens (creating it when missing) the bucket named bucket (the
// full name: Names.Stream(contracts.BucketMailAttachments)), whose objects
// expire after contracts.MailInboundMaxAge, with replicas copies (a change
// of an existing bucket's count goes to log).
func OpenBlobs(ctx context.Context, js jetstream.JetStream, bucket string, replicas int, log *slog.Logger) (*ObjectBlobs, error) {
	limits, _ := contracts.Limits(contracts.BucketMailAttachments)
	store, err := blob.Open(ctx, js, blob.Bucket{Name: bucket, Description: "bytes of imported mails' attachments, until tickets copied them",
		MaxAge: contracts.MailInboundMaxAge, MaxBytes: limits.MaxBytes, Replicas: replicas, Log: log})
	if err != nil {
		return nil, err
	}
	obs, err := js.ObjectStore(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("blob: object store %s: %w", bucket, err)
	}
	return &ObjectBlobs{store: store, obs: obs}, nil
}

// Put stores r's bytes under key. Chunks an upload killed half-way left
// under the key (no metadata, so Stat did not see them) are purged first:
// a reader would otherwise get them before the new ones.
func (b *ObjectBlobs) Put(ctx context.Context, key string, r io.Reader) error {
	if err := b.store.Delete(ctx, key); err != nil {
		return err
	}
	return b.store.Put(ctx, key, r)
}

// Stat reads a complete object's metadata (written after its last chunk).
func (b *ObjectBlobs) Stat(ctx context.Context, key string) (int64, string, bool, error) {
	info, err := b.obs.GetInfo(ctx, key)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return 0, "", false, nil
	}
	if err != nil {
		return 0, "", false, fmt.Errorf("blob: stat %s: %w", key, err)
	}
	digest, ok := strings.CutPrefix(info.Digest, "SHA-256=")
	sum, err := base64.URLEncoding.DecodeString(digest)
	if !ok || err != nil || len(sum) != sha256.Size {
		// Not one of ours: write it again.
		return 0, "", false, nil
	}
	return int64(info.Size), hex.EncodeToString(sum), true, nil
}
