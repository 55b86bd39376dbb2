package importer_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"supportplatform.dev/pkg/blob"
	"supportplatform.dev/pkg/clocktest"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/services/mail/internal/importer"
)

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

var start = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

func mailFrom(i int, from string) importer.Message {
	return importer.Message{ID: fmt.Sprintf("AAMkId-%02d", i), ReceivedDateTime: start.Add(-time.Duration(60-i) * time.Minute),
		Subject: fmt.Sprintf("Question %d", i), From: importer.Address{Name: "Customer", Address: from},
		To: []importer.Address{{Address: "support@contoso.com"}}, InternetMessageID: fmt.Sprintf("<m%d@fabrikam.com>", i),
		ConversationID: "conv-1", BodyText: fmt.Sprintf("Hello %d", i), BodyHTML: fmt.Sprintf("<p>Hello %d</p>", i)}
}

// A first round pages through the look-back window, publishes each new
// mail once with its provider id as message id, skips drafts, removed
// entries and the platform's own mail, and ends with the delta link.
func TestRoundPagesAndPublishes(t *testing.T) {
	e := newEnv(t)
	tg := e.folder(t)
	clock := clocktest.New(start)
	g := newFakeGraph()
	for i := range 8 {
		g.add(mailFrom(i, fmt.Sprintf("customer%d@fabrikam.com", i)))
	}
	old := mailFrom(9, "old@fabrikam.com")
	old.ReceivedDateTime = start.Add(-25 * time.Hour) // outside the look-back window
	g.messages = append([]importer.Message{old}, g.messages...)
	own := mailFrom(10, "SUPPORT@contoso.com") // our reply, seen by the delta's from
	g.add(own)
	tagged := mailFrom(11, "agent@contoso.com") // our reply, seen by its header
	tagged.Headers = map[string]string{"X-Supportplatform-Reply": "ticket 7"}
	g.add(tagged)
	g.add(mailFrom(12, "draft@fabrikam.com"))
	g.changes["AAMkId-12"] = importer.MessageChange{ID: "AAMkId-12", IsDraft: true}
	g.add(mailFrom(13, "removed@fabrikam.com"))
	g.changes["AAMkId-13"] = importer.MessageChange{ID: "AAMkId-13", Removed: true}
	full := mailFrom(14, "jane@fabrikam.com")
	full.From.Name = "Jane Doe"
	full.Cc = []importer.Address{{Name: "Bob", Address: "bob@fabrikam.com"}}
	full.InReplyTo = "<m1@fabrikam.com>"
	full.References = []string{"<m0@fabrikam.com>", "<m1@fabrikam.com>"}
	g.add(full)

	reg := prometheus.NewRegistry()
	metrics, err := importer.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	im := importer.New(importer.Options{Graph: g, Blobs: e.blobs, Publisher: e.bus, PageSize: 3, Metrics: metrics,
		Now: clock.Now, Log: discard()})
	res, err := im.Round(context.Background(), tg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.DeltaLink != "delta:14" || res.Published != 9 || res.SkippedOwn != 2 || res.Resynced {
		t.Fatalf("result %+v", res)
	}
	if len(g.queries) != 1 || g.queries[0].PageSize != 3 || !g.queries[0].Since.Equal(start.Add(-24*time.Hour)) ||
		g.queries[0].FolderID != "inbox" {
		t.Fatalf("queries %+v", g.queries)
	}
	mails, ids := e.mails(t)
	if len(mails) != 9 {
		t.Fatalf("%d mails on MAIL_INBOUND, want 9", len(mails))
	}
	var got []string
	for i, m := range mails {
		got = append(got, m.ProviderMessageID)
		if ids[i] != contracts.MailInboundMsgID(tg.ChannelID, m.ProviderMessageID) {
			t.Errorf("message id %q for %s", ids[i], m.ProviderMessageID)
		}
	}
	slices.Sort(got)
	want := []string{"AAMkId-00", "AAMkId-01", "AAMkId-02", "AAMkId-03", "AAMkId-04", "AAMkId-05", "AAMkId-06", "AAMkId-07", "AAMkId-14"}
	if !slices.Equal(got, want) {
		t.Fatalf("published %v, want %v", got, want)
	}
	i := slices.IndexFunc(mails, func(m contracts.InboundMail) bool { return m.ProviderMessageID == "AAMkId-14" })
	m := mails[i]
	if m.CustomerID != 1 || m.ChannelID != tg.ChannelID || m.FolderID != tg.FolderID || m.Mailbox != "support@contoso.com" ||
		m.Subject != "Question 14" || m.From != (contracts.MailAddress{Name: "Jane Doe", Address: "jane@fabrikam.com"}) ||
		len(m.To) != 1 || m.To[0].Address != "support@contoso.com" || len(m.Cc) != 1 || m.Cc[0].Name != "Bob" ||
		m.InternetMessageID != "<m14@fabrikam.com>" || m.InReplyTo != "<m1@fabrikam.com>" ||
		!slices.Equal(m.References, full.References) || m.ConversationID != "conv-1" ||
		!m.ReceivedAt.Equal(full.ReceivedDateTime) || m.BodyText != "Hello 14" || m.BodyHTML != "<p>Hello 14</p>" ||
		m.Truncated || !m.ImportedAt.Equal(start) {
		t.Fatalf("mail %+v", m)
	}
	if n := counter(t, reg, "mail_import_messages_skipped_total", "own"); n != 2 {
		t.Errorf("own mail skipped %v, want 2", n)
	}
	if n := counter(t, reg, "mail_import_messages_published_total", ""); n != 9 {
		t.Errorf("published %v, want 9", n)
	}

	// The next round from the delta link sees only the new mail.
	g.add(mailFrom(20, "late@fabrikam.com"))
	tg.DeltaLink = res.DeltaLink
	res, err = im.Round(context.Background(), tg, nil)
	if err != nil || res.Published != 1 || res.DeltaLink != "delta:15" {
		t.Fatalf("second round %+v, %v", res, err)
	}
	if mails, _ := e.mails(t); len(mails) != 10 || mails[9].ProviderMessageID != "AAMkId-20" {
		t.Fatalf("after the second round: %d mails", len(mails))
	}
}

// counter reads one series of a counter on reg (label "" for a counter
// without labels).
func counter(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label == "" || (len(m.GetLabel()) > 0 && m.GetLabel()[0].GetValue() == label) {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no metric %s{%s}", name, label)
	return 0
}

// File attachments within the cap land in the bucket byte for byte (their
// size and SHA-256 in the mail); larger ones, item and reference
// attachments are listed as skipped; a repeated round reuses the objects.
func TestRoundAttachments(t *testing.T) {
	e := newEnv(t)
	tg := e.folder(t)
	g := newFakeGraph()
	big := make([]byte, 300<<10) // three chunks
	_, _ = rand.Read(big)
	m := mailFrom(1, "jane@fabrikam.com")
	m.HasAttachments = true
	g.add(m)
	g.atts[m.ID] = []importer.Attachment{
		{ID: "att/1+x==", Name: "report.pdf", ContentType: "application/pdf", Kind: importer.AttachmentFile, Size: int64(len(big)) + 90},
		{ID: "att-2", Name: "huge.zip", ContentType: "application/zip", Kind: importer.AttachmentFile, Size: 2 << 20},
		{ID: "att-3", Name: "Fwd: hello", Kind: importer.AttachmentItem, Size: 1000},
		{ID: "att-4", Name: "plan.docx", Kind: importer.AttachmentReference, Size: 10},
		{ID: "att-5", Name: "liar.bin", Kind: importer.AttachmentFile, Size: 10}, // declares 10 bytes, sends more than the cap
	}
	g.content["att/1+x=="] = big
	g.content["att-2"] = make([]byte, 2<<20)
	g.content["att-5"] = make([]byte, 1<<20+1)
	// Inline images only: Graph says hasAttachments false.
	inline := mailFrom(2, "joe@fabrikam.com")
	inline.BodyHTML = `<p>See <img src="CID:logo@x"></p>`
	g.add(inline)
	g.atts[inline.ID] = []importer.Attachment{{ID: "att-6", Name: "logo.png", ContentType: "image/png", Kind: importer.AttachmentFile,
		Size: 3, IsInline: true, ContentID: "logo@x"}}
	g.content["att-6"] = []byte{1, 2, 3}

	im := e.importer(g, clocktest.New(start).Now)
	if _, err := im.Round(context.Background(), tg, nil); err != nil {
		t.Fatal(err)
	}
	mails, _ := e.mails(t)
	if len(mails) != 2 {
		t.Fatalf("%d mails", len(mails))
	}
	byID := map[string]contracts.InboundMail{mails[0].ProviderMessageID: mails[0], mails[1].ProviderMessageID: mails[1]}
	atts := byID[m.ID].Attachments
	sum := sha256.Sum256(big)
	if len(atts) != 5 {
		t.Fatalf("attachments %+v", atts)
	}
	a := atts[0]
	if a.Name != "report.pdf" || a.Size != int64(len(big)) || a.SHA256 != hex.EncodeToString(sum[:]) ||
		a.Object != importer.ObjectKey(tg.ChannelID, m.ID, "att/1+x==") || a.Skipped != "" {
		t.Fatalf("stored attachment %+v", a)
	}
	if strings.ContainsAny(a.Object, "/+=") {
		t.Fatalf("object key %q", a.Object)
	}
	for i, want := range []string{importer.SkippedTooLarge, importer.SkippedItem, importer.SkippedReference, importer.SkippedTooLarge} {
		if got := atts[i+1]; got.Skipped != want || got.Object != "" {
			t.Errorf("attachment %s: %+v, want skipped %s", got.Name, got, want)
		}
	}
	if atts[1].Size != 2<<20 {
		t.Errorf("skipped attachment's size %d", atts[1].Size)
	}
	reader, err := blob.OpenReader(context.Background(), e.bus.JS, e.bus.Names.Stream(contracts.BucketMailAttachments))
	if err != nil {
		t.Fatal(err)
	}
	rc, size, err := reader.Open(context.Background(), a.Object)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || size != int64(len(big)) || !slices.Equal(got, big) {
		t.Fatalf("bucket holds %d bytes (%d), %v; want the attachment's %d", len(got), size, err, len(big))
	}
	// The too-large upload left nothing behind.
	if _, _, err := reader.Open(context.Background(), importer.ObjectKey(tg.ChannelID, m.ID, "att-5")); err == nil {
		t.Error("the over-cap upload left an object")
	}
	in := byID[inline.ID].Attachments
	if len(in) != 1 || !in[0].IsInline || in[0].ContentID != "logo@x" || in[0].Size != 3 || in[0].Object == "" {
		t.Fatalf("inline attachment %+v", in)
	}

	// A repeated round (a resync) reuses the stored bytes.
	gets := g.contentGets
	if _, err := im.Round(context.Background(), tg, nil); err != nil {
		t.Fatal(err)
	}
	if g.contentGets != gets+1 { // only the over-cap liar is fetched again
		t.Fatalf("content fetched %d times on the repeat, want 1", g.contentGets-gets)
	}
	if mails, _ := e.mails(t); len(mails) != 2 {
		t.Fatalf("%d mails after the repeat, want 2 (same message ids)", len(mails))
	}
}

// Graph forgetting the link: the link is dropped and the look-back window
// imported afresh; mail already published is not published twice.
func TestRoundResyncsWhenGraphForgotTheLink(t *testing.T) {
	e := newEnv(t)
	tg := e.folder(t)
	clock := clocktest.New(start)
	g := newFakeGraph()
	for i := range 4 {
		g.add(mailFrom(i, "jane@fabrikam.com"))
	}
	im := e.importer(g, clock.Now)
	res, err := im.Round(context.Background(), tg, nil)
	if err != nil {
		t.Fatal(err)
	}
	g.add(mailFrom(4, "jane@fabrikam.com"))
	g.expired[res.DeltaLink] = true
	tg.DeltaLink = res.DeltaLink
	clock.Advance(time.Hour)
	cleared := 0
	res, err = im.Round(context.Background(), tg, func(context.Context) error { cleared++; return nil })
	if err != nil || !res.Resynced || res.DeltaLink != "delta:5" || cleared != 1 {
		t.Fatalf("resync %+v, %v, cleared %d", res, err, cleared)
	}
	if last := g.queries[len(g.queries)-1]; !last.Since.Equal(start.Add(time.Hour - 24*time.Hour)) {
		t.Fatalf("resync since %v", last.Since)
	}
	if mails, _ := e.mails(t); len(mails) != 5 {
		t.Fatalf("%d mails, want 5 (each once)", len(mails))
	}
	// Forgetting it during the resync too is an error, not a loop.
	g.expired[""] = true
	if _, err := im.Round(context.Background(), tg, nil); !errors.Is(err, importer.ErrSyncStateNotFound) {
		t.Fatalf("error %v", err)
	}
}

// A message that cannot be fetched fails the round; one deleted meanwhile
// (404) is skipped.
func TestRoundFailsOnAFailedFetch(t *testing.T) {
	e := newEnv(t)
	tg := e.folder(t)
	g := newFakeGraph()
	for i := range 6 {
		g.add(mailFrom(i, "jane@fabrikam.com"))
	}
	g.messages = slices.Insert(g.messages, 2, importer.Message{ID: "gone", From: importer.Address{Address: "x@y.z"}})
	// gone is listed by the delta but deleted before it is fetched.
	g.failing["gone"] = errNotFound
	unavailable := errServer(503)
	g.failing["AAMkId-04"] = unavailable
	im := e.importer(g, clocktest.New(start).Now)
	_, err := im.Round(context.Background(), tg, nil)
	if !errors.Is(err, unavailable) || !strings.Contains(err.Error(), "AAMkId-04") {
		t.Fatalf("error %v, want the 503 of AAMkId-04", err)
	}
	delete(g.failing, "AAMkId-04")
	res, err := im.Round(context.Background(), tg, nil)
	if err != nil || res.Published != 6 {
		t.Fatalf("%+v, %v", res, err)
	}
}
