package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/outbox"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/services/tickets/internal/assistant"
	"supportplatform.dev/services/tickets/internal/assistant/worker"
	"supportplatform.dev/services/tickets/internal/lookup"
	"supportplatform.dev/services/tickets/internal/postgres"
	"supportplatform.dev/services/tickets/internal/tickets"
)

const customer int64 = 4

// The customer's topics as the fake topics service answers them.
var (
	topicList = []contracts.TopicSummary{
		{TopicID: 1, Name: "Refunds", Description: "money back"},
		{TopicID: 2, Name: "Shipping", Description: "parcels"},
		{TopicID: 3, Name: "Accounts", Description: "logins"},
	}
	topicDocs = []contracts.LinkedDocument{
		{DocumentID: 10, TopicID: 1, Title: "Refund policy", Content: "Refunds take 5 days.", RelevanceScore: 9},
		{DocumentID: 11, TopicID: 1, Title: "Refund form", Content: "Fill in the form.", RelevanceScore: 5},
		{DocumentID: 20, TopicID: 2, Title: "Carriers", Content: "We ship with DHL.", RelevanceScore: 7},
	}
	topicActions = map[int64][]contracts.LinkedAction{
		1: {{TopicActionID: 100, ActionID: 1000, Name: "Notify finance", HookName: "finance", Priority: 2}},
		2: {{TopicActionID: 200, ActionID: 2000, Name: "Track parcel", HookName: "track", Priority: 1}},
	}
)

// fakeEngine is deterministic: topics score by keywords, documents rank
// by id, a reply names the end user and the best document, in the
// request's language. PrepareReply fails failReplies times first.
type fakeEngine struct {
	mu          sync.Mutex
	failReplies int
	replyCalls  int
	requests    []assistant.ReplyRequest
	detected    [][]assistant.Topic
}

var fakeProvenance = assistant.Provenance{Engine: "offline", Model: "fake-v1"}

func (f *fakeEngine) DetectTopics(_ context.Context, text string, topics []assistant.Topic) ([]assistant.TopicScore, assistant.Provenance, error) {
	f.mu.Lock()
	f.detected = append(f.detected, topics)
	f.mu.Unlock()
	text = strings.ToLower(text)
	score := map[int64]float64{}
	if strings.Contains(text, "refund") {
		score[1] = 0.9
	}
	if strings.Contains(text, "parcel") {
		score[2] = 0.6
	}
	score[3] = assistant.TopicThreshold - 0.01
	out := make([]assistant.TopicScore, 0, len(topics))
	for _, t := range topics {
		out = append(out, assistant.TopicScore{TopicID: t.TopicID, Score: score[t.TopicID]})
	}
	slices.SortFunc(out, func(a, b assistant.TopicScore) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return out, fakeProvenance, nil
}

func (f *fakeEngine) RankDocuments(_ context.Context, _ string, docs []assistant.Document) ([]assistant.RankedDocument, assistant.Provenance, error) {
	out := make([]assistant.RankedDocument, len(docs))
	for i, d := range docs {
		out[i] = assistant.RankedDocument{Document: d, Score: float64(d.DocumentID) / 100}
	}
	slices.SortFunc(out, func(a, b assistant.RankedDocument) int { return int(b.DocumentID - a.DocumentID) })
	return out, fakeProvenance, nil
}

func (f *fakeEngine) PrepareReply(_ context.Context, r assistant.ReplyRequest) (assistant.Reply, assistant.Provenance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replyCalls++
	if f.replyCalls <= f.failReplies {
		return assistant.Reply{}, assistant.Provenance{}, errors.New("engine down")
	}
	f.requests = append(f.requests, r)
	if len(r.Documents) == 0 {
		return assistant.Reply{Language: r.Language}, fakeProvenance, nil
	}
	return assistant.Reply{Text: fmt.Sprintf("[%s] Hello %s, see %s.", r.Language, r.EndUserName, r.Documents[0].Title),
		Language: r.Language, DocumentIDs: []int64{r.Documents[0].DocumentID}}, fakeProvenance, nil
}

func (f *fakeEngine) Summarize(context.Context, string, string, []assistant.Turn) (string, assistant.Provenance, error) {
	return "summary", fakeProvenance, nil
}

func (f *fakeEngine) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.replyCalls
}

type env struct {
	store   *postgres.Store
	msgs    *tickets.Messages
	engine  *fakeEngine
	metrics *worker.Metrics
	w       *worker.Worker
	reg     *prometheus.Registry
	events  func() []contracts.Event[json.RawMessage]
	// received is when the harness received each of events.
	received func() []time.Time
}

// newEnv starts NATS with every service's user and rights: topics
// answers from the tables above, tickets relays the outbox to EVENTS,
// and the assistant consumes with the worker.
func newEnv(t *testing.T, engine *fakeEngine, backoff []time.Duration) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	names := contracts.Names{Prefix: "asst" + randid.Hex(4)}
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
	topicsBus, ticketsBus, assistantBus := connect("topics"), connect("tickets"), connect("assistant")

	// Every event on EVENTS, as the harness sees it.
	harness, err := nats.Connect(urls[contracts.HarnessUser])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(harness.Close)
	var mu sync.Mutex
	var seen []contracts.Event[json.RawMessage]
	var seenAt []time.Time
	if _, err := harness.Subscribe(names.Subject("events.>"), func(m *nats.Msg) {
		at := time.Now()
		var ev contracts.Event[json.RawMessage]
		if json.Unmarshal(m.Data, &ev) == nil {
			mu.Lock()
			seen = append(seen, ev)
			seenAt = append(seenAt, at)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := harness.Flush(); err != nil {
		t.Fatal(err)
	}

	serve := func(subject string, err error) {
		if err != nil {
			t.Fatalf("serve %s: %v", subject, err)
		}
	}
	_, err = natsbus.Serve(topicsBus, contracts.RPCTopicsAll, contracts.QueueTopics,
		func(_ context.Context, r contracts.TopicsAllRequest) (contracts.TopicsAllReply, error) {
			if r.CustomerID != customer {
				return contracts.TopicsAllReply{}, nil
			}
			return contracts.TopicsAllReply{Topics: topicList}, nil
		})
	serve("all", err)
	_, err = natsbus.Serve(topicsBus, contracts.RPCTopicDocuments, contracts.QueueTopics,
		func(_ context.Context, r contracts.TopicDocumentsRequest) (contracts.TopicDocumentsReply, error) {
			var out []contracts.LinkedDocument
			for _, d := range topicDocs {
				if r.CustomerID == customer && slices.Contains(r.TopicIDs, d.TopicID) {
					out = append(out, d)
				}
			}
			return contracts.TopicDocumentsReply{Documents: out}, nil
		})
	serve("documents", err)
	_, err = natsbus.Serve(topicsBus, contracts.RPCTopicNames, contracts.QueueTopics,
		func(_ context.Context, r contracts.TopicNamesRequest) (contracts.TopicNamesReply, error) {
			out := map[int64]string{}
			for _, tp := range topicList {
				if r.CustomerID == customer && slices.Contains(r.TopicIDs, tp.TopicID) {
					out[tp.TopicID] = tp.Name
				}
			}
			return contracts.TopicNamesReply{Names: out}, nil
		})
	serve("names", err)
	_, err = natsbus.Serve(topicsBus, contracts.RPCTopicActions, contracts.QueueTopics,
		func(_ context.Context, r contracts.TopicActionsRequest) (contracts.TopicActionsReply, error) {
			return contracts.TopicActionsReply{Actions: topicActions[r.TopicID]}, nil
		})
	serve("actions", err)
	if err := topicsBus.NC.Flush(); err != nil {
		t.Fatal(err)
	}

	pool := pgtest.NewSchema(t, postgres.Schema, postgres.Migrations())
	if err := ticketsBus.EnsureEventsStream(ctx); err != nil {
		t.Fatal(err)
	}
	// The relay and store are the tickets binary's; the assistant's store
	// wakes that relay as boot.Deps has it wake in a binary without a
	// relay, with a NOTIFY.
	relay := outbox.NewRelay(pool, ticketsBus, log)
	store := postgres.New(pool, time.Now).WithWake(relay.Wake)
	assistantStore := postgres.New(pool, time.Now).WithWake(outbox.Notify(pool, log))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = relay.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	reg := prometheus.NewRegistry()
	metrics, err := worker.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	look := lookup.New(assistantBus)
	w := worker.New(assistantStore, tickets.NewMessages(assistantStore, look, time.Now), look, engine, worker.Options{Metrics: metrics, Log: log})
	if err := worker.Start(ctx, assistantBus, w, worker.ConsumerOptions{Concurrency: 2, AckWait: 30 * time.Second, BackOff: backoff}); err != nil {
		t.Fatal(err)
	}
	return &env{store: store, msgs: tickets.NewMessages(store, lookup.New(ticketsBus), time.Now), engine: engine,
		metrics: metrics, w: w, reg: reg, events: func() []contracts.Event[json.RawMessage] {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(seen)
		}, received: func() []time.Time {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(seenAt)
		}}
}

// open opens a ticket with an end user's first message.
func (e *env) open(t *testing.T, name, language, text string) tickets.Message {
	t.Helper()
	ctx := context.Background()
	u, err := e.store.CreateEndUser(ctx, customer, tickets.EndUserInput{Name: name, Language: language, CustomFields: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.store.OpenTicketWithMessage(ctx, customer,
		tickets.NewTicket{ChannelID: 9, EndUserID: u.ID, Subject: "Question", SearchConfig: tickets.SubjectSearchConfig("Question"), Status: tickets.StatusOpen, CustomFields: json.RawMessage(`{}`)},
		tickets.MessageInto(tickets.NewMessage{SenderType: tickets.SenderEndUser, Text: text, CustomFields: json.RawMessage(`{}`)}, time.Now))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// waitFor polls the message until ok holds (15 s deadline).
func (e *env) waitFor(t *testing.T, id int64, what string, ok func(tickets.Message) bool) tickets.Message {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		m, err := e.store.Message(context.Background(), customer, id)
		if err != nil {
			t.Fatal(err)
		}
		if ok(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: message %+v", what, m)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) waitCount(t *testing.T, kind, outcome string, want float64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := workCount(t, e.reg, kind, outcome)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("assistant_work_total{%s,%s} = %v, want %v", kind, outcome, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func workCount(t *testing.T, reg *prometheus.Registry, kind, outcome string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "assistant_work_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == kind && labels["outcome"] == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func topicIDs(m tickets.Message) []int64 {
	var out []int64
	for _, tp := range m.Topics {
		out = append(out, tp.TopicID)
	}
	return out
}

func eventsOf[T any](t *testing.T, e *env, eventType string, messageID int64, id func(T) int64) []T {
	t.Helper()
	var out []T
	for _, ev := range e.events() {
		if ev.Type != eventType || ev.CustomerID != customer {
			continue
		}
		var d T
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		if id(d) == messageID {
			out = append(out, d)
		}
	}
	return out
}

// A new end user's message: the topics above the threshold are assigned
// (source auto, best first, their actions triggered by priority) and a
// reply grounded in the topics' documents is prepared in the end user's
// language with the engine's provenance.
func TestMessageCreatedDetectsAndPrepares(t *testing.T) {
	e := newEnv(t, &fakeEngine{}, nil)
	m := e.open(t, "Ada", "", "Hello, I sent the parcel back two weeks ago and my refund has still not arrived. Can you check it please?")

	got := e.waitFor(t, m.ID, "reply prepared", func(m tickets.Message) bool { return m.AIReply.Status == tickets.AIReplyPrepared })
	if ids := topicIDs(got); !slices.Equal(ids, []int64{1, 2}) || got.TopicsSource != tickets.SourceAuto {
		t.Fatalf("topics %v source %q", ids, got.TopicsSource)
	}
	if got.AIReply.Text != "[en] Hello Ada, see Carriers." || got.AIReply.Provenance == nil || *got.AIReply.Provenance != fakeProvenance {
		t.Fatalf("reply %q by %+v", got.AIReply.Text, got.AIReply.Provenance)
	}
	var docIDs []int64
	for _, d := range got.AIReply.Documents {
		docIDs = append(docIDs, d.DocumentID)
	}
	if !slices.Equal(docIDs, []int64{20, 11, 10}) || got.AIReply.Documents[0].Title != "Carriers" || got.AIReply.Documents[0].Score != 0.2 {
		t.Fatalf("prompt documents %+v", got.AIReply.Documents)
	}
	// Detection saw every topic with its documents.
	e.engine.mu.Lock()
	topics := e.engine.detected[0]
	e.engine.mu.Unlock()
	if len(topics) != 3 || len(topics[0].Documents) != 2 || topics[0].Documents[0].Relevance != 9 || len(topics[2].Documents) != 0 {
		t.Fatalf("topics given to detection %+v", topics)
	}

	// The events of PUT .../topics followed, source auto.
	deadline := time.Now().Add(10 * time.Second)
	var assigned []contracts.TopicsAssigned
	var triggered []contracts.TopicActionTriggered
	for time.Now().Before(deadline) {
		assigned = eventsOf(t, e, contracts.EventTopicsAssigned, m.ID, func(d contracts.TopicsAssigned) int64 { return d.MessageID })
		triggered = eventsOf(t, e, contracts.EventTopicActionTriggered, m.ID, func(d contracts.TopicActionTriggered) int64 { return d.MessageID })
		if len(assigned) > 0 && len(triggered) == 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(assigned) != 1 || assigned[0].Source != tickets.SourceAuto || !slices.Equal(assigned[0].TopicIDs, []int64{1, 2}) {
		t.Fatalf("topics-assigned %+v", assigned)
	}
	if len(triggered) != 2 || triggered[0].TopicActionID != 200 || triggered[1].TopicActionID != 100 {
		t.Fatalf("actions triggered %+v", triggered)
	}
	e.waitCount(t, worker.KindDetect, worker.OutcomeAssigned, 1)
	e.waitCount(t, worker.KindReply, worker.OutcomePrepared, 1)

	// The end user's language is the reply's when the text tells none.
	short := e.open(t, "Bea", "spa", "refund?")
	got = e.waitFor(t, short.ID, "short reply", func(m tickets.Message) bool { return m.AIReply.Status == tickets.AIReplyPrepared })
	if !strings.HasPrefix(got.AIReply.Text, "[es] Hello Bea") {
		t.Fatalf("reply %q", got.AIReply.Text)
	}

	// No topic above the threshold: none assigned, no documents, no reply
	// (the engine invents nothing).
	none := e.open(t, "Cy", "", "I would like to talk to somebody about my account settings today.")
	e.waitCount(t, worker.KindReply, worker.OutcomeNoReply, 1)
	if got, _ := e.store.Message(context.Background(), customer, none.ID); len(got.Topics) != 0 || got.AIReply.Status != tickets.AIReplyNone {
		t.Fatalf("message without a topic %+v", got)
	}
	if workCount(t, e.reg, worker.KindDetect, worker.OutcomeNoTopic) != 1 {
		t.Fatal("no-topic not counted")
	}

	// Agent messages are not worked on.
	agent, err := e.store.AddMessage(context.Background(), customer, m.TicketID, tickets.MessageInto(tickets.NewMessage{SenderType: tickets.SenderAgent,
		Text: "refund sent", CustomFields: json.RawMessage(`{}`)}, time.Now))
	if err != nil {
		t.Fatal(err)
	}
	calls := e.engine.calls()
	if err := e.w.HandleMessageCreated(context.Background(), contracts.Event[contracts.MessageChanged]{CustomerID: customer,
		Data: contracts.MessageChanged{MessageID: agent.ID, TicketID: m.TicketID, SenderType: string(tickets.SenderAgent)}}, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.store.Message(context.Background(), customer, agent.ID); len(got.Topics) != 0 || e.engine.calls() != calls {
		t.Fatalf("the agent message was worked on: %+v", got)
	}
}

// The assistant runs no relay: its NATS user may publish none of the
// tickets events, and a relay publishes whichever rows it claims. Its
// store wakes the tickets binary's relay with a NOTIFY after each commit,
// so its events are on the stream within milliseconds, well inside the
// bound below, where the relay's 1 s poll alone would land each one at a
// random point of its second (three in a row within 200 ms: < 1%).
func TestAssistantEventsArePublishedAtOnce(t *testing.T) {
	e := newEnv(t, &fakeEngine{}, nil)
	const bound = 200 * time.Millisecond
	for i := range 3 {
		m := e.open(t, fmt.Sprint("Ada", i), "", "My refund has still not arrived, can you check it please?")
		deadline := time.Now().Add(10 * time.Second)
		for {
			evs, at := e.events(), e.received()
			k := slices.IndexFunc(evs, func(ev contracts.Event[json.RawMessage]) bool {
				var d contracts.TopicsAssigned
				return ev.Type == contracts.EventTopicsAssigned && json.Unmarshal(ev.Data, &d) == nil && d.MessageID == m.ID
			})
			if k >= 0 {
				// occurredAt is the assistant's clock inside its
				// transaction, before the commit.
				if d := at[k].Sub(evs[k].OccurredAt); d > bound {
					t.Fatalf("message %d: topics-assigned on the stream %v after the assistant wrote it, want within %v", i, d, bound)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("message %d: no topics-assigned event", i)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// A detection request assigns topics to any message; it never replaces
// topics set manually.
func TestDetectionRequested(t *testing.T) {
	e := newEnv(t, &fakeEngine{}, nil)
	ctx := context.Background()
	m := e.open(t, "Ada", "", "Where is my parcel?")
	e.waitFor(t, m.ID, "auto topics", func(m tickets.Message) bool { return len(m.Topics) == 1 })
	agent, err := e.store.AddMessage(ctx, customer, m.TicketID, tickets.MessageInto(tickets.NewMessage{SenderType: tickets.SenderAgent,
		Text: "Your refund is on its way.", CustomFields: json.RawMessage(`{}`)}, time.Now))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.msgs.DetectTopics(ctx, customer, agent.ID); err != nil {
		t.Fatal(err)
	}
	got := e.waitFor(t, agent.ID, "detected", func(m tickets.Message) bool { return len(m.Topics) > 0 })
	if !slices.Equal(topicIDs(got), []int64{1}) || got.TopicsSource != tickets.SourceAuto || got.AIReply.Status != tickets.AIReplyNone {
		t.Fatalf("agent message %+v", got)
	}

	// Manual topics stay.
	if err := e.msgs.SetTopics(ctx, customer, m.ID, []int64{3}); err != nil {
		t.Fatal(err)
	}
	if err := e.msgs.DetectTopics(ctx, customer, m.ID); err != nil {
		t.Fatal(err)
	}
	e.waitCount(t, worker.KindDetect, worker.OutcomeManualKept, 1)
	if got, _ := e.store.Message(ctx, customer, m.ID); !slices.Equal(topicIDs(got), []int64{3}) || got.TopicsSource != tickets.SourceManual {
		t.Fatalf("manual topics replaced: %+v", got)
	}
}

// An engine that fails delays the work: the event is redelivered (with
// the backoff) until the reply is prepared; the topics are assigned once.
func TestEngineErrorIsRedelivered(t *testing.T) {
	engine := &fakeEngine{failReplies: 2}
	e := newEnv(t, engine, []time.Duration{50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond})
	m := e.open(t, "Ada", "", "My refund did not arrive, where is it?")
	got := e.waitFor(t, m.ID, "reply after failures", func(m tickets.Message) bool { return m.AIReply.Status == tickets.AIReplyPrepared })
	if engine.calls() != 3 || !slices.Equal(topicIDs(got), []int64{1}) {
		t.Fatalf("%d reply calls, topics %v", engine.calls(), topicIDs(got))
	}
	e.waitCount(t, worker.KindReply, worker.OutcomeError, 2)
	if n := workCount(t, e.reg, worker.KindDetect, worker.OutcomeAssigned); n != 1 {
		t.Fatalf("detected %v times", n)
	}
	if n := len(eventsOf(t, e, contracts.EventTopicActionTriggered, m.ID, func(d contracts.TopicActionTriggered) int64 { return d.MessageID })); n > 1 {
		t.Fatalf("%d actions triggered", n)
	}
}
