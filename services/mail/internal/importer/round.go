package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/services/mail/internal/mail"
)

// Defaults of Options.
const (
	DefaultLookback           = 24 * time.Hour
	DefaultPageSize           = 50
	DefaultAttachmentMaxBytes = 25 << 20
	DefaultMessageConcurrency = 4
	// DefaultMaxPayload keeps an InboundMail under NATS's default 1 MB
	// payload with room for the headers.
	DefaultMaxPayload = 1<<20 - 16<<10
)

// Caps of an InboundMail's lists, so that a mail to thousands of
// recipients still fits in one NATS message.
const (
	maxRecipients = 500
	maxReferences = 100
)

// Options configure an Importer.
type Options struct {
	Graph     Graph
	Blobs     Blobs
	Publisher Publisher
	// Lookback bounds a folder's first round (and a resync) to mail
	// received since now minus it.
	Lookback time.Duration
	// PageSize is asked of Graph per delta page.
	PageSize int
	// AttachmentMaxBytes is the tickets service's cap: larger file
	// attachments are listed as skipped, without their bytes.
	AttachmentMaxBytes int64
	// MessageConcurrency bounds the messages of one round fetched and
	// published at once.
	MessageConcurrency int
	// MaxPayload bounds one InboundMail's JSON: bodies are cut further
	// until it fits.
	MaxPayload int
	Metrics    *Metrics
	Now        func() time.Time
	Log        *slog.Logger
}

// Importer runs delta rounds. It is safe for concurrent use (one round per
// folder at a time is the Runner's job).
type Importer struct {
	o Options
}

// New fills o's defaults and returns an Importer.
func New(o Options) *Importer {
	if o.Lookback <= 0 {
		o.Lookback = DefaultLookback
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.AttachmentMaxBytes <= 0 {
		o.AttachmentMaxBytes = DefaultAttachmentMaxBytes
	}
	if o.MessageConcurrency <= 0 {
		o.MessageConcurrency = DefaultMessageConcurrency
	}
	if o.MaxPayload <= 0 {
		o.MaxPayload = DefaultMaxPayload
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Importer{o: o}
}

// RoundResult is what a successful round did.
type RoundResult struct {
	// DeltaLink is the link of the folder's next round.
	DeltaLink string
	// Published counts the mails handed on (PubAck), repeats of earlier
	// rounds included; SkippedOwn the platform's own mails.
	Published, SkippedOwn int
	// Resynced is true when Graph had forgotten the stored link and the
	// round began afresh from the look-back window.
	Resynced bool
	// Unimportable are the mails the round skipped for good (SkipSize,
	// SkipRefused, SkipUndecodable): asking again would fail the same way,
	// so they must not hold the folder's import up. They are recorded on
	// the folder.
	Unimportable []SkippedMail
}

// SkippedMail is a mail a round could not import.
type SkippedMail struct {
	MessageID string
	// Reason is the skipped-messages metric's label; Detail the failure.
	Reason, Detail string
}

// Round runs one delta round of t: from its delta link, or from the
// look-back window when it has none, following next links to the delta
// link, and publishes every new mail. It returns only after every mail of
// the round was published and acknowledged by the stream; on any error the
// caller must not store a delta link (the next round publishes again, and
// the stream's message ids drop the repeats). onResync is called when Graph
// no longer knows t's link, before the round starts afresh.
func (im *Importer) Round(ctx context.Context, t Target, onResync func(context.Context) error) (RoundResult, error) {
	var res RoundResult
	var published, own atomic.Int64
	var unimportable skippedList
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(im.o.MessageConcurrency)
	link, err := im.pages(gctx, t, g, &published, &own, &unimportable, onResync, &res)
	werr := g.Wait()
	res.Published, res.SkippedOwn = int(published.Load()), int(own.Load())
	res.Unimportable = unimportable.list
	// A message's failure cancels the paging: report the cause.
	if werr != nil {
		return res, werr
	}
	if err != nil {
		return res, err
	}
	res.DeltaLink = link
	return res, nil
}

// pages walks the round's pages and starts a goroutine of g per message; it
// returns the delta link.
func (im *Importer) pages(ctx context.Context, t Target, g *errgroup.Group, published, own *atomic.Int64,
	unimportable *skippedList, onResync func(context.Context) error, res *RoundResult) (string, error) {
	q := DeltaQuery{Mailbox: t.mailboxKey(), FolderID: t.ExternalFolderID, PageSize: im.o.PageSize}
	link := t.DeltaLink
	if link == "" {
		q.Since = im.o.Now().Add(-im.o.Lookback)
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	for pages := 0; ; pages++ {
		page, err := im.o.Graph.MessagesDelta(ctx, t.TenantID, q, link)
		if errors.Is(err, ErrSyncStateNotFound) && link != "" && !res.Resynced {
			// Graph forgot the link (410 Gone, syncStateNotFound): the
			// look-back window again from scratch. Mail already handed on
			// is dropped by its message id.
			im.o.Log.WarnContext(ctx, "delta link expired: resyncing the folder", "folderID", t.FolderID)
			im.o.Metrics.resync()
			res.Resynced = true
			if onResync != nil {
				if err := onResync(ctx); err != nil {
					return "", fmt.Errorf("forget the delta link: %w", err)
				}
			}
			link, q.Since = "", im.o.Now().Add(-im.o.Lookback)
			continue
		}
		if err != nil {
			return "", fmt.Errorf("delta page %d: %w", pages+1, err)
		}
		for _, m := range page.Messages {
			if m.Removed || m.IsDraft || m.ID == "" {
				continue
			}
			mu.Lock()
			dup := seen[m.ID]
			seen[m.ID] = true
			mu.Unlock()
			if dup {
				continue
			}
			if sameAddress(m.From.Address, t.Mailbox) {
				own.Add(1)
				im.o.Metrics.skipped(SkipOwn)
				continue
			}
			id := m.ID
			// Go blocks while MessageConcurrency messages are in hand:
			// the paging waits for them rather than buffering pages.
			g.Go(func() error {
				skip, err := im.importMessage(ctx, t, id)
				if reason, ok := permanent(err); ok {
					// The mail, not Graph or the stream, is the problem:
					// skip it, record it, and let the round go on.
					im.o.Log.WarnContext(ctx, "mail skipped: it cannot be imported", "folderID", t.FolderID,
						"messageID", id, "reason", reason, "error", err.Error())
					im.o.Metrics.skipped(reason)
					unimportable.add(SkippedMail{MessageID: id, Reason: reason, Detail: err.Error()})
					return nil
				}
				if err != nil {
					return fmt.Errorf("message %s: %w", id, err)
				}
				switch skip {
				case "":
					published.Add(1)
				case SkipOwn:
					own.Add(1)
				case SkipSize:
					unimportable.add(SkippedMail{MessageID: id, Reason: SkipSize, Detail: "no InboundMail can hold it"})
				}
				return nil
			})
		}
		switch {
		case page.NextLink != "":
			link = page.NextLink
		case page.DeltaLink != "":
			return page.DeltaLink, nil
		default:
			return "", fmt.Errorf("delta page %d has neither a next nor a delta link", pages+1)
		}
	}
}

// mailboxKey names the mailbox in Graph's paths: its user's id once
// resolved, else (a channel whose subscription predates the resolution)
// its address.
func (t Target) mailboxKey() string {
	if t.MailboxUserID != "" {
		return t.MailboxUserID
	}
	return t.Mailbox
}

// Skip reasons of the skipped-messages metric.
const (
	SkipOwn  = "own"     // mail the platform sent
	SkipGone = "gone"    // deleted before it was fetched
	SkipSize = "too-big" // no InboundMail could hold it, or Graph's reply exceeds the client's cap
	// SkipRefused: Graph refused the mail's read with a 4xx that asking
	// again does not change (not 401, 403, 408 or 429).
	SkipRefused = "refused"
	// SkipUndecodable: Graph's reply for the mail cannot be read.
	SkipUndecodable = "undecodable"
)

// permanent reports whether a mail's failure is the mail's own, the same
// at every attempt, and under which reason it is skipped. Everything else
// (5xx, 429, 408, the network, the stream, the blob store, a cancelled
// round) fails the round, which is retried; so do 401 and 403, which
// concern the app's token or rights in the mailbox, not one mail (skipping
// would drop every mail of the folder): graph.ImportSource does not class
// them as ErrRefused.
func permanent(err error) (string, bool) {
	switch {
	case err == nil:
		return "", false
	case errors.Is(err, ErrReplyTooLarge):
		return SkipSize, true
	case errors.Is(err, ErrMalformedReply):
		return SkipUndecodable, true
	case errors.Is(err, ErrRefused), errors.Is(err, ErrNotFound):
		return SkipRefused, true
	}
	return "", false
}

// skippedList collects a round's unimportable mails from its goroutines.
type skippedList struct {
	mu   sync.Mutex
	list []SkippedMail
}

func (l *skippedList) add(m SkippedMail) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, m)
}

// importMessage fetches one mail with its attachments and publishes it. It
// returns "" when it published the mail, else why it skipped it (SkipOwn,
// SkipGone, SkipSize): a skipped mail is no failure.
func (im *Importer) importMessage(ctx context.Context, t Target, id string) (skip string, err error) {
	msg, err := im.o.Graph.Message(ctx, t.TenantID, t.mailboxKey(), id)
	if errors.Is(err, ErrNotFound) {
		im.o.Metrics.skipped(SkipGone)
		return SkipGone, nil
	}
	if err != nil {
		return "", err
	}
	if ownMail(msg, t.Mailbox) {
		im.o.Metrics.skipped(SkipOwn)
		return SkipOwn, nil
	}
	var atts []contracts.InboundAttachment
	// Graph's hasAttachments is false for a mail with inline images only:
	// a cid: reference in the HTML asks for the list too.
	if msg.HasAttachments || strings.Contains(strings.ToLower(msg.BodyHTML), "cid:") {
		atts, err = im.attachments(ctx, t, id)
		if errors.Is(err, ErrNotFound) {
			im.o.Metrics.skipped(SkipGone)
			return SkipGone, nil
		}
		if err != nil {
			return "", err
		}
	}
	in := inboundMail(t, id, msg, atts, im.o.Now())
	data, err := encodeMail(in, im.o.MaxPayload)
	if err != nil {
		// Nothing would ever make it fit: skipping it keeps the folder's
		// import going.
		im.o.Log.ErrorContext(ctx, "mail skipped: too large for one message", "folderID", t.FolderID, "messageID", id, "error", err.Error())
		im.o.Metrics.skipped(SkipSize)
		return SkipSize, nil
	}
	if err := im.o.Publisher.PublishRaw(ctx, contracts.MailInboundSubject(t.ChannelID),
		contracts.MailInboundMsgID(t.ChannelID, id), data); err != nil {
		return "", err
	}
	im.o.Metrics.publishedOne()
	return "", nil
}

// ownMail recognises the platform's own mail: sent from the channel's
// mailbox, or carrying mail.HeaderReply (our own replies, seen again in a
// folder such as Sent Items or in a mailbox that receives its own mail).
func ownMail(msg Message, mailbox string) bool {
	if sameAddress(msg.From.Address, mailbox) || (msg.From.Address == "" && sameAddress(msg.Sender.Address, mailbox)) {
		return true
	}
	for k := range msg.Headers {
		if strings.EqualFold(k, mail.HeaderReply) {
			return true
		}
	}
	return false
}

func sameAddress(a, mailbox string) bool {
	return a != "" && strings.EqualFold(strings.TrimSpace(a), mailbox)
}

func inboundMail(t Target, id string, msg Message, atts []contracts.InboundAttachment, now time.Time) contracts.InboundMail {
	from := msg.From
	if from.Address == "" {
		from = msg.Sender
	}
	in := contracts.InboundMail{
		CustomerID: t.CustomerID, ChannelID: t.ChannelID, FolderID: t.FolderID, Mailbox: t.Mailbox,
		ProviderMessageID: id, InternetMessageID: msg.InternetMessageID, InReplyTo: msg.InReplyTo,
		References: capList(msg.References, maxReferences), ConversationID: msg.ConversationID,
		Subject: msg.Subject, From: address(from),
		To: addresses(capList(msg.To, maxRecipients)), Cc: addresses(capList(msg.Cc, maxRecipients)),
		ReceivedAt: msg.ReceivedDateTime.UTC(), Attachments: atts, ImportedAt: now.UTC(),
	}
	var cut1, cut2 bool
	in.BodyText, cut1 = truncate(msg.BodyText, contracts.MailBodyTextMax)
	in.BodyHTML, cut2 = truncate(msg.BodyHTML, contracts.MailBodyHTMLMax)
	in.Truncated = cut1 || cut2
	return in
}

// capList keeps the last n of a list (the latest references matter most
// for threading; for recipients any n will do).
func capList[T any](s []T, n int) []T {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func address(a Address) contracts.MailAddress {
	return contracts.MailAddress{Name: a.Name, Address: a.Address}
}

func addresses(as []Address) []contracts.MailAddress {
	if len(as) == 0 {
		return nil
	}
	out := make([]contracts.MailAddress, 0, len(as))
	for _, a := range as {
		out = append(out, address(a))
	}
	return out
}

// truncate cuts s to at most n bytes at a rune boundary.
func truncate(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// encodeMail is in's JSON, without HTML escaping (an HTML body would grow
// sixfold), with the bodies cut further while it exceeds max.
func encodeMail(in contracts.InboundMail, max int) ([]byte, error) {
	for {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(in); err != nil {
			return nil, err
		}
		if buf.Len() <= max {
			return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
		}
		// Quotes, backslashes and control characters escape to more than
		// one byte: halve the larger body (the HTML first: the text says
		// the same) until it fits.
		switch {
		case in.BodyHTML != "":
			in.BodyHTML, _ = truncate(in.BodyHTML, len(in.BodyHTML)/2)
		case in.BodyText != "":
			in.BodyText, _ = truncate(in.BodyText, len(in.BodyText)/2)
		default:
			return nil, fmt.Errorf("the mail's JSON is %d bytes without its bodies, over %d", buf.Len(), max)
		}
		in.Truncated = true
	}
}
