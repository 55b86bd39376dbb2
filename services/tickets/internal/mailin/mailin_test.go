package mailin_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/blob"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/services/tickets/internal/lookup"
	"supportplatform.dev/services/tickets/internal/mailin"
	"supportplatform.dev/services/tickets/internal/postgres"
	"supportplatform.dev/services/tickets/internal/tickets"
)

const (
	customer    int64 = 5
	mailChannel int64 = 8
	chatChannel int64 = 9
)

// env is the importer over the real store, an in-process NATS server with
// the mail context's channel lookup answered on it, the tickets bucket and
// the import worker's bucket.
type env struct {
	bus         *natsbus.Bus
	names       contracts.Names
	pool        *pgxpool.Pool
	store       *postgres.Store
	attachments *tickets.Attachments
	inbox       *blob.ObjectStore // MAIL_ATTACHMENTS
	importer    *mailin.Importer
}

func newEnv(t *testing.T) env {
	t.Helper()
	return newEnvWith(t, 0, nil)
}

// newEnvWith is newEnv with an attachment quota (0: the default) and the
// store the importer uses wrapped by wrap (nil: as it is).
func newEnvWith(t *testing.T, quota int64, wrap func(*postgres.Store) mailin.Store) env {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewSchema(t, postgres.Schema, postgres.Migrations())
	store := postgres.New(pool, time.Now)
	names := contracts.Names{Prefix: "mailin" + randid.Hex(4)}
	log := slog.New(slog.DiscardHandler)
	bus, err := natsbus.Connect(natstest.Start(t), "tickets", names, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	if _, err := natsbus.Serve(bus, contracts.RPCChannel, contracts.QueueMail,
		func(_ context.Context, r contracts.ChannelRequest) (contracts.ChannelReply, error) {
			if r.CustomerID != customer {
				return contracts.ChannelReply{}, nil
			}
			switch r.ChannelID {
			case mailChannel:
				return contracts.ChannelReply{Exists: true, ChannelID: mailChannel, Kind: "email", EmailAddress: "support@shop.example"}, nil
			case chatChannel:
				return contracts.ChannelReply{Exists: true, ChannelID: chatChannel, Kind: "chat"}, nil
			}
			return contracts.ChannelReply{}, nil
		}); err != nil {
		t.Fatal(err)
	}
	own, err := blob.Open(ctx, bus.JS, blob.Bucket{Name: names.Stream(contracts.BucketAttachments)})
	if err != nil {
		t.Fatal(err)
	}
	inbox, err := blob.Open(ctx, bus.JS, blob.Bucket{Name: names.Stream(contracts.BucketMailAttachments)})
	if err != nil {
		t.Fatal(err)
	}
	attachments := tickets.NewAttachments(store, own, tickets.AttachmentOptions{MaxBytes: 1 << 20, QuotaBytes: quota, GarbageDelay: time.Minute})
	var importStore mailin.Store = store
	if wrap != nil {
		importStore = wrap(store)
	}
	importer := mailin.New(importStore, lookup.New(bus), attachments,
		mailin.NewBucketSource(bus.JS, names.Stream(contracts.BucketMailAttachments)), mailin.Options{Log: log})
	return env{bus: bus, names: names, pool: pool, store: store, attachments: attachments, inbox: inbox, importer: importer}
}

// object puts data into the import worker's bucket and describes it as
// the mail's attachment.
func (e env) object(t *testing.T, name string, data []byte) contracts.InboundAttachment {
	t.Helper()
	key := "obj" + randid.Hex(8)
	if err := e.inbox.Put(context.Background(), key, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return contracts.InboundAttachment{Name: name, ContentType: "application/octet-stream", Size: int64(len(data)),
		SHA256: hex.EncodeToString(sum[:]), Object: key}
}

func mail(id string, attachments ...contracts.InboundAttachment) contracts.InboundMail {
	return contracts.InboundMail{
		CustomerID: customer, ChannelID: mailChannel, FolderID: 1, Mailbox: "support@shop.example",
		ProviderMessageID: "AAMk-" + id, InternetMessageID: "<" + id + "@mail.example>", ConversationID: "conv-" + id,
		Subject: "Broken " + id, From: contracts.MailAddress{Name: "Ada", Address: "Ada@Example.com"},
		To:       []contracts.MailAddress{{Address: "support@shop.example"}},
		BodyText: "It broke.\n\n-- \nAda", ReceivedAt: time.Now().Add(-time.Second), ImportedAt: time.Now(),
		Attachments: attachments,
	}
}

func (e env) publish(t *testing.T, m contracts.InboundMail, msgID string) {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.bus.PublishRaw(context.Background(), contracts.MailInboundSubject(m.ChannelID), msgID, data); err != nil {
		t.Fatal(err)
	}
}

// settled waits until the consumer has handled (acknowledged or
// terminated) every message of its stream.
func settled(t *testing.T, bus *natsbus.Bus, stream, durable string, published uint64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := bus.JS.Consumer(context.Background(), stream, durable)
		if err == nil {
			info, err := c.Info(context.Background())
			if err == nil && info.AckFloor.Stream >= published && info.NumAckPending == 0 && info.NumPending == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer %s did not handle %d messages in time", durable, published)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func count(t *testing.T, pool *pgxpool.Pool, sql string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// objects counts the tickets bucket's objects.
func (e env) objects(t *testing.T) int {
	t.Helper()
	obs, err := e.bus.JS.ObjectStore(context.Background(), e.names.Stream(contracts.BucketAttachments))
	if err != nil {
		t.Fatal(err)
	}
	list, err := obs.List(context.Background())
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(list)
}

func random(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConsumerImportsAMailOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if err := mailin.Start(ctx, e.bus, e.importer); err != nil {
		t.Fatal(err)
	}
	stream, durable := e.names.Stream(contracts.StreamMailInbound), e.names.Stream(mailin.Durable)
	pdf := append([]byte("%PDF-1.7\n"), random(t, 300<<10)...)
	m := mail("1", e.object(t, "invoice.pdf", pdf))
	e.publish(t, m, contracts.MailInboundMsgID(m.ChannelID, m.ProviderMessageID))
	settled(t, e.bus, stream, durable, 1)

	got, ok, err := e.store.ImportedMail(ctx, customer, mailChannel, m.ProviderMessageID)
	if err != nil || !ok {
		t.Fatalf("not imported: %v", err)
	}
	msg, err := e.store.Message(ctx, customer, got.MessageID)
	if err != nil || msg.Text != "It broke." || msg.SenderType != tickets.SenderEndUser || msg.Mail == nil ||
		msg.Mail.From.Address != "ada@example.com" || msg.Attachments != 1 {
		t.Fatalf("message %+v %v", msg, err)
	}
	tk, err := e.store.TicketDetails(ctx, customer, got.TicketID)
	if err != nil || tk.Subject != "Broken 1" || tk.Status != tickets.StatusOpen {
		t.Fatalf("ticket %+v %v", tk, err)
	}
	list, err := e.attachments.Attachments(ctx, customer, got.MessageID)
	if err != nil || len(list) != 1 || list[0].FileName != "invoice.pdf" || list[0].ContentType != "application/pdf" ||
		list[0].Size != int64(len(pdf)) || list[0].SHA256 != m.Attachments[0].SHA256 {
		t.Fatalf("attachments %+v %v", list, err)
	}
	_, r, err := e.attachments.Open(ctx, customer, got.MessageID, list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := io.ReadAll(r)
	_ = r.Close()
	if !bytes.Equal(stored, pdf) {
		t.Fatal("the stored bytes differ")
	}

	// The same mail again (a resync after the duplicate window: another
	// message id) and a redelivery change nothing.
	e.publish(t, m, "again-"+randid.Hex(4))
	settled(t, e.bus, stream, durable, 2)
	if n := count(t, e.pool, `SELECT count(*) FROM ticket_messages`); n != 1 {
		t.Fatalf("%d messages", n)
	}
	if n := count(t, e.pool, `SELECT count(*) FROM attachments`); n != 1 {
		t.Fatalf("%d attachments", n)
	}

	// A reply by mail joins the ticket.
	reply := mail("2")
	reply.InReplyTo, reply.ConversationID = "<1@mail.example>", "conv-other"
	e.publish(t, reply, "reply")
	settled(t, e.bus, stream, durable, 3)
	if r, ok, _ := e.store.ImportedMail(ctx, customer, mailChannel, reply.ProviderMessageID); !ok || r.TicketID != got.TicketID {
		t.Fatalf("reply %+v %v", r, ok)
	}

	// Mails of a channel that is not a live e-mail channel of the customer
	// are terminated, not retried, and write nothing.
	for i, bad := range []contracts.InboundMail{mail("chat"), mail("unknown"), mail("foreign")} {
		switch i {
		case 0:
			bad.ChannelID = chatChannel
		case 1:
			bad.ChannelID = 99
		case 2:
			bad.CustomerID = customer + 1
		}
		e.publish(t, bad, "bad-"+randid.Hex(4))
	}
	settled(t, e.bus, stream, durable, 6)
	if n := count(t, e.pool, `SELECT count(*) FROM ticket_messages`); n != 2 {
		t.Fatalf("%d messages", n)
	}
}

// Eight handlers of one mail with an attachment at once: one message, one
// attachment, and the bytes the others copied are swept.
func TestParallelHandlersOfOneMail(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	data := random(t, 200<<10)
	m := mail("p", e.object(t, "data.bin", data))
	var wg sync.WaitGroup
	outs := make([]tickets.MailImported, 8)
	errs := make([]error, 8)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = e.importer.Handle(ctx, m, nil)
		}()
	}
	wg.Wait()
	created := 0
	for i, o := range outs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if o.Outcome == tickets.MailNewTicket {
			created++
		}
		if o.MessageID != outs[0].MessageID {
			t.Fatalf("outcomes %+v", outs)
		}
	}
	if created != 1 || count(t, e.pool, `SELECT count(*) FROM ticket_messages`) != 1 ||
		count(t, e.pool, `SELECT count(*) FROM attachments`) != 1 {
		t.Fatalf("created %d", created)
	}
	if _, err := e.attachments.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.objects(t); n != 1 {
		t.Fatalf("%d objects in the tickets bucket after the sweep", n)
	}
	if n := count(t, e.pool, `SELECT count(*) FROM blob_garbage`); n != 0 {
		t.Fatalf("%d garbage rows", n)
	}
}

func TestSkippedAttachments(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ok := e.object(t, "ok.txt", []byte("hello"))
	big := e.object(t, "big.bin", random(t, 1<<20+1)) // one byte over the cap
	bigUnderstated := e.object(t, "sneaky.bin", random(t, 1<<20+1))
	bigUnderstated.Size = 10
	wrongSum := e.object(t, "changed.txt", []byte("changed"))
	wrongSum.SHA256 = hex.EncodeToString(make([]byte, 32))
	gone := contracts.InboundAttachment{Name: "gone.txt", Size: 3, Object: "missing" + randid.Hex(4)}
	notCarried := contracts.InboundAttachment{Name: "meeting.ics", Size: 1, Skipped: "item-attachment"}
	m := mail("s", ok, big, bigUnderstated, wrongSum, gone, notCarried)
	out, err := e.importer.Handle(ctx, m, nil)
	if err != nil || out.Outcome != tickets.MailNewTicket {
		t.Fatalf("import %+v %v", out, err)
	}
	list, _ := e.attachments.Attachments(ctx, customer, out.MessageID)
	if len(list) != 1 || list[0].FileName != "ok.txt" {
		t.Fatalf("attachments %+v", list)
	}
	msg, _ := e.store.Message(ctx, customer, out.MessageID)
	want := []tickets.SkippedAttachment{
		{Name: "meeting.ics", Size: 1, Reason: "item-attachment"},
		{Name: "big.bin", Size: 1<<20 + 1, Reason: tickets.SkipTooLarge},
		{Name: "sneaky.bin", Size: 10, Reason: tickets.SkipTooLarge},
		{Name: "changed.txt", Size: 7, Reason: tickets.SkipChecksum},
		{Name: "gone.txt", Size: 3, Reason: tickets.SkipMissing},
	}
	if len(msg.Mail.Skipped) != len(want) {
		t.Fatalf("skipped %+v", msg.Mail.Skipped)
	}
	for i := range want {
		if msg.Mail.Skipped[i] != want[i] {
			t.Fatalf("skipped %+v, want %+v", msg.Mail.Skipped, want)
		}
	}
	// Only the stored file's bytes stay.
	if _, err := e.attachments.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.objects(t); n != 1 {
		t.Fatalf("%d objects", n)
	}
}

// beforeImport runs before once ahead of the first ImportMail (another
// upload taking the quota's room while a mail's attachments are copied).
type beforeImport struct {
	*postgres.Store
	before func()
	once   sync.Once
}

func (s *beforeImport) ImportMail(ctx context.Context, in tickets.MailImport, d tickets.MailDecisions) (tickets.MailImported, error) {
	s.once.Do(s.before)
	return s.Store.ImportMail(ctx, in, d)
}

// A mail over the customer's attachment quota is imported; the files that
// do not fit are listed as skipped (reason quota), also when the room went
// to another upload between the copy and the import's transaction.
func TestImportOverQuotaKeepsTheMail(t *testing.T) {
	var e env
	var racer *beforeImport
	e = newEnvWith(t, 1000, func(s *postgres.Store) mailin.Store {
		racer = &beforeImport{Store: s, before: func() {}}
		return racer
	})
	ctx := context.Background()
	m := mail("q1", e.object(t, "a.bin", random(t, 600)), e.object(t, "b.bin", random(t, 600)), e.object(t, "c.bin", random(t, 300)))
	out, err := e.importer.Handle(ctx, m, nil)
	if err != nil || out.Outcome != tickets.MailNewTicket {
		t.Fatalf("import %+v %v", out, err)
	}
	list, _ := e.attachments.Attachments(ctx, customer, out.MessageID)
	msg, _ := e.store.Message(ctx, customer, out.MessageID)
	if len(list) != 2 || list[0].FileName != "a.bin" || list[1].FileName != "c.bin" ||
		len(msg.Mail.Skipped) != 1 || msg.Mail.Skipped[0] != (tickets.SkippedAttachment{Name: "b.bin", Size: 600, Reason: tickets.SkipQuota}) {
		t.Fatalf("attachments %+v, skipped %+v", list, msg.Mail.Skipped)
	}

	// 900 of 1000 used; 50 more would fit, but an upload of 60 takes the
	// room before the import's transaction.
	racer.once = sync.Once{}
	racer.before = func() {
		if _, err := e.attachments.Upload(ctx, customer, out.MessageID, "upload.bin", -1, bytes.NewReader(random(t, 60))); err != nil {
			t.Errorf("upload: %v", err)
		}
	}
	out2, err := e.importer.Handle(ctx, mail("q2", e.object(t, "d.bin", random(t, 50))), nil)
	if err != nil || out2.Outcome != tickets.MailNewTicket {
		t.Fatalf("import %+v %v", out2, err)
	}
	list, _ = e.attachments.Attachments(ctx, customer, out2.MessageID)
	msg, _ = e.store.Message(ctx, customer, out2.MessageID)
	if len(list) != 0 || len(msg.Mail.Skipped) != 1 || msg.Mail.Skipped[0] != (tickets.SkippedAttachment{Name: "d.bin", Size: 50, Reason: tickets.SkipQuota}) {
		t.Fatalf("attachments %+v, skipped %+v", list, msg.Mail.Skipped)
	}
	if u, _ := e.attachments.Usage(ctx, customer); u != 960 {
		t.Fatalf("usage %d", u)
	}
	// Only the stored files' bytes stay.
	if _, err := e.attachments.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.objects(t); n != 3 {
		t.Fatalf("%d objects", n)
	}
}
