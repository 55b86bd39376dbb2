// Package mailin turns the mails the import worker publishes on
// MAIL_INBOUND into tickets and messages: a durable JetStream consumer
// (Start) hands each contracts.InboundMail to Importer.Handle, which checks
// the channel, prepares the mail (Prepare), copies its attachments' bytes
// into the tickets bucket and has the store thread and insert it in one
// transaction. Handling a mail twice, or two copies at once, makes one
// message. It also applies the mail context's reports on replies sent by
// mail (StartDelivery).
package mailin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/blob"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// Durable is the MAIL_INBOUND consumer's base name (Names.Stream prefixes
// it).
const Durable = contracts.DurableTicketsMailInbound

// Store imports prepared mails (package postgres).
type Store interface {
	// ImportedMail returns the message already made from the mail, if any.
	ImportedMail(ctx context.Context, customerID, channelID int64, providerMessageID string) (tickets.MailImported, bool, error)
	// ImportMail loads what the import is decided on under the mail's
	// thread lock, calls d's decisions and writes them.
	ImportMail(ctx context.Context, in tickets.MailImport, d tickets.MailDecisions) (tickets.MailImported, error)
}

// Channels answers which channel a mail came through (package lookup).
type Channels interface {
	Channel(ctx context.Context, customerID, channelID int64) (contracts.ChannelReply, error)
}

// Attachments writes attachment bytes into the tickets bucket
// (tickets.Attachments: the path uploads take).
type Attachments interface {
	MaxBytes() int64
	// QuotaBytes caps a customer's attachment bytes; Usage is what the
	// customer's attachments take now.
	QuotaBytes() int64
	Usage(ctx context.Context, customerID int64) (int64, error)
	ReserveKeys(ctx context.Context, customerID int64, n int, due time.Time) ([]string, error)
	Write(ctx context.Context, key, fileName string, body io.Reader) (tickets.Attachment, error)
	Discard(ctx context.Context, keys []string) error
}

// Source reads the import worker's attachment objects
// (contracts.BucketMailAttachments).
type Source interface {
	Open(ctx context.Context, key string) (io.ReadCloser, int64, error)
}

// Options configure an Importer.
type Options struct {
	// KeyDelay is how long the bytes copied for a mail may stay without
	// metadata before the sweeper may collect them: longer than any
	// handling of one mail (default 15 minutes).
	KeyDelay time.Duration
	Metrics  *Metrics
	// Refs checks the ticket references in subjects; without it no
	// subject names a ticket.
	Refs *tickets.Refs
	Now  func() time.Time
	Log  *slog.Logger
}

// Importer handles inbound mails.
type Importer struct {
	store       Store
	channels    Channels
	attachments Attachments
	source      Source
	o           Options
}

// New returns an importer.
func New(store Store, channels Channels, attachments Attachments, source Source, o Options) *Importer {
	if o.KeyDelay <= 0 {
		o.KeyDelay = 15 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Importer{store: store, channels: channels, attachments: attachments, source: source, o: o}
}

// Handle imports one mail. A mail imported before is a duplicate (nothing
// changes). A mail that can never be imported (no live e-mail channel of
// its customer, no usable sender, invalid data) is logged and returned
// with natsbus.ErrPermanent (terminated); other errors are worth a
// redelivery. progress is called while attachments are copied (the
// consumer's in-progress acknowledgement); it may be nil.
func (im *Importer) Handle(ctx context.Context, m contracts.InboundMail, progress func()) (tickets.MailImported, error) {
	start := im.o.Now()
	out, err := im.handle(ctx, m, progress)
	var rej rejection
	switch {
	case errors.As(err, &rej):
		out.Outcome = tickets.MailRejected
		im.o.Log.WarnContext(ctx, "mailin: mail rejected", "customerID", m.CustomerID, "channelID", m.ChannelID,
			"providerMessageID", m.ProviderMessageID, "reason", rej.reason)
		err = fmt.Errorf("%w: %w", natsbus.ErrPermanent, err)
	case err == nil:
		im.o.Log.DebugContext(ctx, "mailin: mail imported", "customerID", m.CustomerID, "channelID", m.ChannelID,
			"outcome", string(out.Outcome), "ticketID", out.TicketID, "messageID", out.MessageID)
	}
	if out.Outcome != "" {
		im.o.Metrics.observe(out.Outcome, im.o.Now().Sub(start))
	}
	return out, err
}

func (im *Importer) handle(ctx context.Context, m contracts.InboundMail, progress func()) (tickets.MailImported, error) {
	in, err := Prepare(m)
	if err != nil {
		return tickets.MailImported{}, err
	}
	// A redelivery is the common duplicate: found before any work.
	if done, dup, err := im.store.ImportedMail(ctx, in.CustomerID, in.Mail.ChannelID, in.Mail.ProviderMessageID); err != nil || dup {
		return done, err
	}
	ch, err := im.channels.Channel(ctx, in.CustomerID, in.Mail.ChannelID)
	if err != nil {
		return tickets.MailImported{}, err
	}
	if !ch.Exists || ch.IsDeleted || ch.Kind != tickets.ChannelKindEmail {
		return tickets.MailImported{}, reject("channel %d is not a live e-mail channel of customer %d", in.Mail.ChannelID, in.CustomerID)
	}
	in.Mailbox = ch.EmailAddress
	in.SubjectTicketID = im.o.Refs.Find(in.CustomerID, in.Mail.Subject)
	keys, err := im.copyAttachments(ctx, m, &in, progress)
	if err != nil {
		im.discard(ctx, keys)
		return tickets.MailImported{}, err
	}
	in.QuotaBytes = im.attachments.QuotaBytes()
	out, err := im.store.ImportMail(ctx, in, tickets.ImportDecisions(in, im.o.Now))
	if errors.Is(err, tickets.ErrQuota) {
		// Other attachments of the customer took the room since the copies
		// were checked: the mail is kept, its attachments listed as
		// skipped.
		for _, a := range in.Attachments {
			in.Mail.Skipped = append(in.Mail.Skipped, tickets.SkippedAttachment{Name: a.FileName, Size: a.Size, Reason: tickets.SkipQuota})
		}
		in.Attachments = nil
		out, err = im.store.ImportMail(ctx, in, tickets.ImportDecisions(in, im.o.Now))
	}
	used := map[string]bool{}
	if err == nil && out.Outcome != tickets.MailDuplicate {
		for _, a := range in.Attachments {
			used[a.Key] = true
		}
	}
	var unused []string
	for _, k := range keys {
		if !used[k] {
			unused = append(unused, k)
		}
	}
	// Copies made for nothing (a duplicate, a failure, skipped files) go
	// with the sweeper's next round.
	im.discard(ctx, unused)
	if apperr.Is(err, apperr.Invalid) {
		return out, reject("the store refused it: %v", err)
	}
	return out, err
}

func (im *Importer) discard(ctx context.Context, keys []string) {
	if err := im.attachments.Discard(context.WithoutCancel(ctx), keys); err != nil {
		// They are still collected when their reservation falls due.
		im.o.Log.WarnContext(ctx, "mailin: discarding copied attachments failed", "error", err.Error(), "keys", len(keys))
	}
}

// copyAttachments copies the bytes of the mail's carried attachments into
// the tickets bucket under keys reserved first (crash safety: until the
// message's transaction claims them, they are garbage falling due after
// KeyDelay). Files over the size cap, gone from the import bucket or not
// matching the mail's SHA-256 are skipped (in.Mail.Skipped); any other
// failure is an error and the mail is redelivered. Files that would take
// the customer's attachments over the quota are skipped too (reason
// quota). It returns every reserved key.
func (im *Importer) copyAttachments(ctx context.Context, m contracts.InboundMail, in *tickets.MailImport, progress func()) ([]string, error) {
	var carried []contracts.InboundAttachment
	for _, a := range m.Attachments {
		if a.Object != "" {
			carried = append(carried, a)
		}
	}
	if len(carried) == 0 {
		return nil, nil
	}
	used, err := im.attachments.Usage(ctx, in.CustomerID)
	if err != nil {
		return nil, err
	}
	quota := im.attachments.QuotaBytes()
	keys, err := im.attachments.ReserveKeys(ctx, in.CustomerID, len(carried), im.o.Now().Add(im.o.KeyDelay))
	if err != nil {
		return nil, err
	}
	skip := func(a contracts.InboundAttachment, reason string) {
		in.Mail.Skipped = append(in.Mail.Skipped, tickets.SkippedAttachment{Name: tickets.CleanFileName(a.Name), Size: a.Size, Reason: reason})
	}
	for i, a := range carried {
		if progress != nil {
			progress()
		}
		if a.Size > im.attachments.MaxBytes() {
			skip(a, tickets.SkipTooLarge)
			continue
		}
		if tickets.CheckQuota(used, quota, max(a.Size, 0)) != nil {
			skip(a, tickets.SkipQuota)
			continue
		}
		stored, err := im.copyOne(ctx, keys[i], a)
		switch {
		case err == nil && tickets.CheckQuota(used, quota, stored.Size) != nil:
			// Larger than the import worker said.
			skip(a, tickets.SkipQuota)
		case apperr.Is(err, apperr.NotFound):
			skip(a, tickets.SkipMissing)
		case apperr.Is(err, apperr.TooLarge):
			skip(a, tickets.SkipTooLarge)
		case err != nil:
			return keys, err
		case a.SHA256 != "" && !strings.EqualFold(a.SHA256, stored.SHA256):
			im.o.Log.WarnContext(ctx, "mailin: attachment does not match its SHA-256; skipped", "customerID", in.CustomerID,
				"providerMessageID", in.Mail.ProviderMessageID, "object", a.Object)
			skip(a, tickets.SkipChecksum)
		default:
			in.Attachments = append(in.Attachments, stored)
			used += stored.Size
		}
	}
	return keys, nil
}

func (im *Importer) copyOne(ctx context.Context, key string, a contracts.InboundAttachment) (tickets.Attachment, error) {
	r, _, err := im.source.Open(ctx, a.Object)
	if err != nil {
		return tickets.Attachment{}, err
	}
	defer func() { _ = r.Close() }()
	return im.attachments.Write(ctx, key, a.Name, r)
}

// Start declares MAIL_INBOUND and consumes it until the bus drains its
// consumers at shutdown: explicit acknowledgement, redelivery with
// backoff (natsbus.Consume), an in-progress acknowledgement per attachment
// copied.
func Start(ctx context.Context, bus *natsbus.Bus, im *Importer) error {
	if err := bus.EnsureMailInboundStream(ctx); err != nil {
		return err
	}
	_, err := natsbus.Consume(ctx, bus, bus.Names.Stream(contracts.StreamMailInbound), jetstream.ConsumerConfig{
		Durable:       bus.Names.Stream(Durable),
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckWait:       time.Minute,
	}, func(ctx context.Context, m contracts.InboundMail, msg jetstream.Msg) error {
		_, err := im.Handle(ctx, m, func() { _ = msg.InProgress() })
		return err
	})
	return err
}

// BucketSource opens the import worker's attachment bucket when first
// needed: it exists once the import worker has run, which need not be
// before tickets starts. A failed open is tried again at the next need.
type BucketSource struct {
	js     jetstream.JetStream
	bucket string
	mu     sync.Mutex
	store  *blob.ObjectStore
}

// NewBucketSource reads bucket (the full name, with the prefix) through js.
func NewBucketSource(js jetstream.JetStream, bucket string) *BucketSource {
	return &BucketSource{js: js, bucket: bucket}
}

// Open reads an object of the bucket; a missing object is NotFound.
func (s *BucketSource) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	s.mu.Lock()
	if s.store == nil {
		st, err := blob.OpenReader(ctx, s.js, s.bucket)
		if err != nil {
			s.mu.Unlock()
			return nil, 0, err
		}
		s.store = st
	}
	st := s.store
	s.mu.Unlock()
	return st.Open(ctx, key)
}
