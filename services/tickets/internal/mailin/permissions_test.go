package mailin_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

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

// With each service's own NATS user and rights (contracts.Services): the
// import worker writes its bucket and publishes the mail, mailingest
// answers the channel lookup, and the tickets user declares and consumes
// MAIL_INBOUND and EVENTS, reads the import worker's bucket and writes
// its own.
func TestConsumersWithTheServicesRights(t *testing.T) {
	ctx := context.Background()
	names := contracts.Names{Prefix: "rights" + randid.Hex(4)}
	urls := natstest.StartWithUsers(t, names)
	log := slog.New(slog.DiscardHandler)
	connect := func(user string) *natsbus.Bus {
		b, err := natsbus.Connect(urls[user], user, names, log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close(context.Background()) })
		return b
	}
	worker, ingest, tk := connect("importreply"), connect("mailingest"), connect("tickets")

	if _, err := natsbus.Serve(ingest, contracts.RPCChannel, contracts.QueueMail,
		func(_ context.Context, r contracts.ChannelRequest) (contracts.ChannelReply, error) {
			return contracts.ChannelReply{Exists: true, ChannelID: r.ChannelID, Kind: "email"}, nil
		}); err != nil {
		t.Fatal(err)
	}
	inbox, err := blob.Open(ctx, worker.JS, blob.Bucket{Name: names.Stream(contracts.BucketMailAttachments), MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("log line 1\nlog line 2\n")
	if err := inbox.Put(ctx, "o1", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)

	pool := pgtest.NewSchema(t, postgres.Schema, postgres.Migrations())
	store := postgres.New(pool, time.Now)
	own, err := blob.Open(ctx, tk.JS, blob.Bucket{Name: names.Stream(contracts.BucketAttachments)})
	if err != nil {
		t.Fatal(err)
	}
	attachments := tickets.NewAttachments(store, own, tickets.AttachmentOptions{MaxBytes: 1 << 20})
	importer := mailin.New(store, lookup.New(tk), attachments,
		mailin.NewBucketSource(tk.JS, names.Stream(contracts.BucketMailAttachments)), mailin.Options{Log: log})
	if err := tk.EnsureEventsStream(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mailin.Start(ctx, tk, importer); err != nil {
		t.Fatal(err)
	}
	if err := mailin.StartDelivery(ctx, tk, store); err != nil {
		t.Fatal(err)
	}

	m := mail("r", contracts.InboundAttachment{Name: "log.txt", Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Object: "o1"})
	payload, _ := json.Marshal(m)
	if err := worker.EnsureMailInboundStream(ctx); err != nil {
		t.Fatal(err)
	}
	if err := worker.PublishRaw(ctx, contracts.MailInboundSubject(m.ChannelID), contracts.MailInboundMsgID(m.ChannelID, m.ProviderMessageID), payload); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, ok, err := store.ImportedMail(ctx, customer, mailChannel, m.ProviderMessageID)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			list, err := attachments.Attachments(ctx, customer, got.MessageID)
			if err != nil || len(list) != 1 || list[0].Size != int64(len(data)) {
				t.Fatalf("attachments %+v %v", list, err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the mail was not imported")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
