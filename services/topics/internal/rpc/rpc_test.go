package rpc_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/outbox"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/services/topics/internal/postgres"
	"supportplatform.dev/services/topics/internal/rpc"
	"supportplatform.dev/services/topics/internal/topics"
)

type env struct {
	bus    *natsbus.Bus // the caller's connection (another service)
	svc    *topics.Service
	events jetstream.Stream
	relay  *outbox.Relay // publishes what the store wrote to the outbox
}

func setup(t *testing.T) env {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	url := natstest.Start(t)
	names := contracts.Names{Prefix: "rpctest"}

	server, err := natsbus.Connect(url, "topics", names, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.NC.Close() })
	if err := server.EnsureEventsStream(ctx); err != nil {
		t.Fatal(err)
	}
	pool := pgtest.NewSchema(t, postgres.Schema, postgres.Migrations())
	store := postgres.New(pool, time.Now)
	svc := &topics.Service{
		TopicService:         topics.NewTopicService(store),
		TopicActionService:   topics.NewTopicActionService(store),
		TopicDocumentService: topics.NewTopicDocumentService(store),
		PageMappingService:   topics.NewPageMappingService(store),
		ActionService:        topics.NewActionService(store),
		DocumentService:      topics.NewDocumentService(store),
	}
	if err := rpc.Serve(server, svc); err != nil {
		t.Fatal(err)
	}
	client, err := natsbus.Connect(url, "caller", names, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.NC.Close() })
	stream, err := client.JS.Stream(ctx, names.Stream(contracts.StreamEvents))
	if err != nil {
		t.Fatal(err)
	}
	return env{bus: client, svc: svc, events: stream, relay: outbox.NewRelay(pool, server, log)}
}

func TestLookups(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	const cust, other int64 = 11, 12

	billing, err := e.svc.CreateTopic(ctx, cust, topics.TopicInput{Name: "Billing", Description: "invoices and payments"})
	if err != nil {
		t.Fatal(err)
	}
	shipping, _ := e.svc.CreateTopic(ctx, cust, topics.TopicInput{Name: "Shipping"})
	foreign, _ := e.svc.CreateTopic(ctx, other, topics.TopicInput{Name: "Foreign"})

	notify, _ := e.svc.CreateAction(ctx, cust, topics.ActionInput{Name: "notify", HookName: "slack"})
	escalate, _ := e.svc.CreateAction(ctx, cust, topics.ActionInput{Name: "escalate", HookName: "pager"})
	disabled, _ := e.svc.CreateAction(ctx, cust, topics.ActionInput{Name: "off", HookName: "x", IsActive: ptr(false)})
	mapped, err := e.svc.CreateTopicActions(ctx, cust, []topics.TopicActionInput{
		{TopicID: &billing.ID, ActionID: &notify.ID, Priority: ptr[int64](20)},
		{TopicID: &billing.ID, ActionID: &escalate.ID, Priority: ptr[int64](10)},
		{TopicID: &billing.ID, ActionID: &disabled.ID, Priority: ptr[int64](1)},
		{TopicID: &shipping.ID, ActionID: &notify.ID, Priority: ptr[int64](1), IsActive: ptr(false)},
	})
	if err != nil {
		t.Fatal(err)
	}

	faq, _ := e.svc.CreateDocument(ctx, cust, topics.DocumentInput{Title: "FAQ", Content: "how to pay"})
	terms, _ := e.svc.CreateDocument(ctx, cust, topics.DocumentInput{Title: "Terms", Content: "terms text"})
	for _, in := range []topics.TopicDocumentInput{
		{TopicID: &billing.ID, DocumentID: &faq.ID, RelevanceScore: ptr[int64](40)},
		{TopicID: &shipping.ID, DocumentID: &faq.ID, RelevanceScore: ptr[int64](60)},
		{TopicID: &billing.ID, DocumentID: &terms.ID, RelevanceScore: ptr[int64](90)},
	} {
		if _, err := e.svc.CreateTopicDocument(ctx, cust, in); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("names", func(t *testing.T) {
		r, err := natsbus.Request[contracts.TopicNamesRequest, contracts.TopicNamesReply](ctx, e.bus, contracts.RPCTopicNames,
			contracts.TopicNamesRequest{CustomerID: cust, TopicIDs: []int64{billing.ID, shipping.ID, foreign.ID, 424242}})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Names) != 2 || r.Names[billing.ID] != "Billing" || r.Names[shipping.ID] != "Shipping" {
			t.Fatalf("names = %v", r.Names)
		}
	})
	t.Run("all", func(t *testing.T) {
		r, err := natsbus.Request[contracts.TopicsAllRequest, contracts.TopicsAllReply](ctx, e.bus, contracts.RPCTopicsAll,
			contracts.TopicsAllRequest{CustomerID: cust})
		if err != nil {
			t.Fatal(err)
		}
		want := []contracts.TopicSummary{{TopicID: billing.ID, Name: "Billing", Description: "invoices and payments"}, {TopicID: shipping.ID, Name: "Shipping"}}
		if len(r.Topics) != 2 || r.Topics[0] != want[0] || r.Topics[1] != want[1] {
			t.Fatalf("topics = %+v", r.Topics)
		}
	})
	t.Run("documents by relevance", func(t *testing.T) {
		r, err := natsbus.Request[contracts.TopicDocumentsRequest, contracts.TopicDocumentsReply](ctx, e.bus, contracts.RPCTopicDocuments,
			contracts.TopicDocumentsRequest{CustomerID: cust, TopicIDs: []int64{billing.ID, shipping.ID}})
		if err != nil {
			t.Fatal(err)
		}
		want := []contracts.LinkedDocument{
			{DocumentID: terms.ID, TopicID: billing.ID, Title: "Terms", Content: "terms text", RelevanceScore: 90},
			{DocumentID: faq.ID, TopicID: shipping.ID, Title: "FAQ", Content: "how to pay", RelevanceScore: 60},
		}
		if len(r.Documents) != 2 || r.Documents[0] != want[0] || r.Documents[1] != want[1] {
			t.Fatalf("documents = %+v", r.Documents)
		}
		r, err = natsbus.Request[contracts.TopicDocumentsRequest, contracts.TopicDocumentsReply](ctx, e.bus, contracts.RPCTopicDocuments,
			contracts.TopicDocumentsRequest{CustomerID: cust, TopicIDs: []int64{billing.ID}, Limit: 1})
		if err != nil || len(r.Documents) != 1 || r.Documents[0].DocumentID != terms.ID {
			t.Fatalf("limited = %+v, %v", r.Documents, err)
		}
	})
	t.Run("active actions by priority", func(t *testing.T) {
		r, err := natsbus.Request[contracts.TopicActionsRequest, contracts.TopicActionsReply](ctx, e.bus, contracts.RPCTopicActions,
			contracts.TopicActionsRequest{CustomerID: cust, TopicID: billing.ID})
		if err != nil {
			t.Fatal(err)
		}
		want := []contracts.LinkedAction{
			{TopicActionID: mapped[1].ID, ActionID: escalate.ID, Name: "escalate", HookName: "pager", Priority: 10},
			{TopicActionID: mapped[0].ID, ActionID: notify.ID, Name: "notify", HookName: "slack", Priority: 20},
		}
		if len(r.Actions) != 2 || r.Actions[0] != want[0] || r.Actions[1] != want[1] {
			t.Fatalf("actions = %+v", r.Actions)
		}
	})
	t.Run("other tenant sees nothing", func(t *testing.T) {
		r, err := natsbus.Request[contracts.TopicActionsRequest, contracts.TopicActionsReply](ctx, e.bus, contracts.RPCTopicActions,
			contracts.TopicActionsRequest{CustomerID: other, TopicID: billing.ID})
		if err != nil || len(r.Actions) != 0 {
			t.Fatalf("actions = %+v, %v", r.Actions, err)
		}
	})
	t.Run("invalid requests are application errors", func(t *testing.T) {
		_, err := natsbus.Request[contracts.TopicActionsRequest, contracts.TopicActionsReply](ctx, e.bus, contracts.RPCTopicActions,
			contracts.TopicActionsRequest{CustomerID: cust})
		if !apperr.Is(err, apperr.Invalid) {
			t.Fatalf("err = %v", err)
		}
		_, err = natsbus.Request[contracts.TopicsAllRequest, contracts.TopicsAllReply](ctx, e.bus, contracts.RPCTopicsAll,
			contracts.TopicsAllRequest{})
		if !apperr.Is(err, apperr.Invalid) {
			t.Fatalf("err = %v", err)
		}
		// A malformed payload is answered, not dropped.
		msg, err := e.bus.NC.Request(e.bus.Names.Subject(contracts.RPCTopicNames), []byte("{not json"), 5*time.Second)
		if err != nil || !json.Valid(msg.Data) {
			t.Fatalf("reply = %v, %v", msg, err)
		}
	})

	// After deletion nothing of the topic is returned.
	if err := e.svc.DeleteTopic(ctx, cust, billing.ID); err != nil {
		t.Fatal(err)
	}
	t.Run("deleted topic", func(t *testing.T) {
		names, err := natsbus.Request[contracts.TopicNamesRequest, contracts.TopicNamesReply](ctx, e.bus, contracts.RPCTopicNames,
			contracts.TopicNamesRequest{CustomerID: cust, TopicIDs: []int64{billing.ID}})
		if err != nil || len(names.Names) != 0 {
			t.Fatalf("names = %v, %v", names.Names, err)
		}
		acts, err := natsbus.Request[contracts.TopicActionsRequest, contracts.TopicActionsReply](ctx, e.bus, contracts.RPCTopicActions,
			contracts.TopicActionsRequest{CustomerID: cust, TopicID: billing.ID})
		if err != nil || len(acts.Actions) != 0 {
			t.Fatalf("actions = %+v, %v", acts.Actions, err)
		}
		docs, err := natsbus.Request[contracts.TopicDocumentsRequest, contracts.TopicDocumentsReply](ctx, e.bus, contracts.RPCTopicDocuments,
			contracts.TopicDocumentsRequest{CustomerID: cust, TopicIDs: []int64{billing.ID, shipping.ID}})
		if err != nil || len(docs.Documents) != 1 || docs.Documents[0].DocumentID != faq.ID {
			t.Fatalf("documents = %+v, %v", docs.Documents, err)
		}
		all, err := natsbus.Request[contracts.TopicsAllRequest, contracts.TopicsAllReply](ctx, e.bus, contracts.RPCTopicsAll,
			contracts.TopicsAllRequest{CustomerID: cust})
		if err != nil || len(all.Topics) != 1 || all.Topics[0].TopicID != shipping.ID {
			t.Fatalf("all = %+v, %v", all.Topics, err)
		}
	})

	// The store wrote each change's events to the outbox; the relay (which
	// boot runs in the service) publishes them on the EVENTS stream.
	t.Run("events", func(t *testing.T) {
		if n, err := e.relay.Flush(ctx); err != nil || n != 11 {
			t.Fatalf("relayed %d events, %v; want 11", n, err)
		}
		cons, err := e.events.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
		if err != nil {
			t.Fatal(err)
		}
		batch, err := cons.FetchNoWait(100)
		if err != nil {
			t.Fatal(err)
		}
		type seen struct {
			subject, typ string
			customer     int64
		}
		var got []seen
		var deleted contracts.Event[contracts.TopicChanged]
		var firstMapping contracts.Event[contracts.MappingChanged]
		for m := range batch.Messages() {
			var ev contracts.Event[json.RawMessage]
			if err := json.Unmarshal(m.Data(), &ev); err != nil {
				t.Fatal(err)
			}
			got = append(got, seen{m.Subject(), ev.Type, ev.CustomerID})
			switch {
			case ev.Type == contracts.EventTopicDeleted:
				_ = json.Unmarshal(m.Data(), &deleted)
			case ev.Type == contracts.EventTopicActionChanged && firstMapping.ID == "":
				_ = json.Unmarshal(m.Data(), &firstMapping)
			}
		}
		count := map[string]int{}
		for _, s := range got {
			count[s.typ]++
			if s.subject != "rpctest.events."+s.typ {
				t.Errorf("event %s on subject %s", s.typ, s.subject)
			}
		}
		if count[contracts.EventTopicCreated] != 3 || count[contracts.EventTopicActionChanged] != 4 ||
			count[contracts.EventTopicDocumentChanged] != 3 || count[contracts.EventTopicDeleted] != 1 {
			t.Fatalf("events = %v", count)
		}
		if deleted.CustomerID != cust || deleted.Data.TopicID != billing.ID || deleted.Data.Name != "Billing" {
			t.Fatalf("topic.deleted = %+v", deleted)
		}
		if firstMapping.Data != (contracts.MappingChanged{Op: "created", MappingID: mapped[0].ID, TopicID: billing.ID, TargetID: notify.ID}) {
			t.Fatalf("mapping event = %+v", firstMapping.Data)
		}
	})
}

// TestQueueGroup shows two replicas share the subject: each request is
// answered once.
func TestQueueGroup(t *testing.T) {
	e := setup(t)
	if err := rpc.Serve(e.bus, e.svc); err != nil {
		t.Fatal(err)
	}
	inbox := nats.NewInbox()
	replies, err := e.bus.NC.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(contracts.TopicsAllRequest{CustomerID: 1})
	if err := e.bus.NC.PublishRequest(e.bus.Names.Subject(contracts.RPCTopicsAll), inbox, body); err != nil {
		t.Fatal(err)
	}
	if _, err := replies.NextMsg(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := replies.NextMsg(300 * time.Millisecond); err == nil {
		t.Fatal("a request was answered twice")
	}
}

func ptr[T any](v T) *T { return &v }
