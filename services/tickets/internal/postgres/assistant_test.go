package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/services/tickets/internal/assistant"
	"supportplatform.dev/services/tickets/internal/postgres"
	"supportplatform.dev/services/tickets/internal/tickets"
)

var offlineBM25 = assistant.Provenance{Engine: "offline", Model: "bm25-v1"}

func preparedReply(text string) tickets.PreparedReply {
	return tickets.PreparedReply{Text: text, Provenance: offlineBM25, Documents: []assistant.RankedDocument{
		{Document: assistant.Document{DocumentID: 7, TopicID: 1, Title: "Refunds", Content: "Refunds take 5 days."}, Score: 0.8},
		{Document: assistant.Document{DocumentID: 3, TopicID: 1, Title: "Returns", Content: "Send it back."}, Score: 0.25},
	}}
}

// The reply is stored with its engine, model and documents, once: a
// second preparation (a redelivered event) changes nothing, and a reply
// that was sent is never replaced.
func TestSavePreparedReply(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	m := msgOpen(t, s, tenantA, "Where is my refund?")

	if saved, err := s.SavePreparedReply(ctx, tenantB, m.ID, preparedReply("x")); err == nil || saved {
		t.Fatalf("another customer's message: %v %v", saved, err)
	}
	if saved, err := s.SavePreparedReply(ctx, tenantA, m.ID, tickets.PreparedReply{Provenance: offlineBM25}); err != nil || saved {
		t.Fatalf("an empty reply was stored: %v %v", saved, err)
	}
	saved, err := s.SavePreparedReply(ctx, tenantA, m.ID, preparedReply("Hello Writer, refunds take 5 days."))
	if err != nil || !saved {
		t.Fatalf("saved %v, %v", saved, err)
	}
	got, err := s.Message(ctx, tenantA, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.AIReply.Status != tickets.AIReplyPrepared || got.AIReply.Text != "Hello Writer, refunds take 5 days." ||
		got.AIReply.CreatedAt == nil || !got.AIReply.CreatedAt.Equal(clock) || got.AIReply.Provenance == nil || *got.AIReply.Provenance != offlineBM25 {
		t.Fatalf("message %+v", got)
	}
	want := []tickets.PromptDocument{{DocumentID: 7, Title: "Refunds", Content: "Refunds take 5 days.", Score: 0.8},
		{DocumentID: 3, Title: "Returns", Content: "Send it back.", Score: 0.25}}
	if !slices.Equal(got.AIReply.Documents, want) {
		t.Fatalf("documents %+v", got.AIReply.Documents)
	}
	if evs := msgEvents(t, pool, contracts.EventMessageUpdated); len(evs) != 1 {
		t.Fatalf("%d ticket.message.updated events", len(evs))
	}

	// Redelivered: the reply stays as it was, no event.
	if saved, err := s.SavePreparedReply(ctx, tenantA, m.ID, preparedReply("Another text")); err != nil || saved {
		t.Fatalf("second preparation: %v %v", saved, err)
	}
	again, _ := s.Message(ctx, tenantA, m.ID)
	if again.AIReply.Text != got.AIReply.Text || len(msgEvents(t, pool, contracts.EventMessageUpdated)) != 1 {
		t.Fatalf("the redelivery changed the reply: %q", again.AIReply.Text)
	}

	// Sent: still kept, and the provenance stays for the report.
	if _, err := sendReply(ctx, s, tenantA, m.ID, tickets.ReplyInput{AccountID: 5}); err != nil {
		t.Fatal(err)
	}
	if saved, err := s.SavePreparedReply(ctx, tenantA, m.ID, preparedReply("Late")); err != nil || saved {
		t.Fatalf("after sending: %v %v", saved, err)
	}
	sent, _ := s.Message(ctx, tenantA, m.ID)
	if sent.AIReply.Status != tickets.AIReplySent || sent.AIReply.Provenance == nil {
		t.Fatalf("sent message %+v", sent)
	}

	// A reply an agent writes is no engine's.
	m2 := msgOpen(t, s, tenantA, "Second question")
	if _, err := s.SavePreparedReply(ctx, tenantA, m2.ID, preparedReply("Engine text")); err != nil {
		t.Fatal(err)
	}
	if err := msgPatch(t, s, tenantA, m2.ID, `{"aiReply":{"text":"Agent text"}}`); err != nil {
		t.Fatal(err)
	}
	patched, _ := s.Message(ctx, tenantA, m2.ID)
	if patched.AIReply.Text != "Agent text" || patched.AIReply.Provenance != nil || patched.AIReply.Documents != nil {
		t.Fatalf("patched %+v", patched)
	}
}

// Two assistant replicas preparing one message at once (a redelivery
// while the first handler still runs): one reply is stored, one event
// written.
func TestSavePreparedReplyParallel(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	m := msgOpen(t, s, tenantA, "Where is my parcel?")
	const n = 8
	var wg sync.WaitGroup
	var saved atomic.Int32
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			ok, err := s.SavePreparedReply(ctx, tenantA, m.ID, preparedReply(fmt.Sprintf("Reply %d", i)))
			if err != nil {
				errs <- err
			}
			if ok {
				saved.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := s.Message(ctx, tenantA, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Load() != 1 || got.AIReply.Status != tickets.AIReplyPrepared || !strings.HasPrefix(got.AIReply.Text, "Reply ") {
		t.Fatalf("%d saved, message %+v", saved.Load(), got)
	}
	if evs := msgEvents(t, pool, contracts.EventMessageUpdated); len(evs) != 1 {
		t.Fatalf("%d ticket.message.updated events, want 1", len(evs))
	}
}

// An automatic assignment never replaces topics set manually, also when
// the manual one came first; a manual one replaces automatic topics.
func TestManualTopicsWin(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	names := map[int64]string{1: "Billing", 2: "Shipping"}
	assign := func(id int64, source string, ids ...int64) error {
		a := msgAssignment(names, nil, ids...)
		a.Source = source
		return s.AssignTopics(ctx, tenantA, id, a)
	}
	topicIDs := func(id int64) ([]int64, string) {
		m, err := s.Message(ctx, tenantA, id)
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, tp := range m.Topics {
			out = append(out, tp.TopicID)
		}
		return out, m.TopicsSource
	}

	m := msgOpen(t, s, tenantA, "manual first")
	if _, src := topicIDs(m.ID); src != "" {
		t.Fatalf("a new message's source %q", src)
	}
	if err := assign(m.ID, tickets.SourceManual, 2); err != nil {
		t.Fatal(err)
	}
	if err := assign(m.ID, tickets.SourceAuto, 1); !errors.Is(err, tickets.ErrManualTopicsKept) {
		t.Fatalf("auto over manual: %v", err)
	}
	if ids, src := topicIDs(m.ID); !slices.Equal(ids, []int64{2}) || src != tickets.SourceManual {
		t.Fatalf("topics %v source %q", ids, src)
	}

	m2 := msgOpen(t, s, tenantA, "auto first")
	if err := assign(m2.ID, tickets.SourceAuto, 1); err != nil {
		t.Fatal(err)
	}
	if ids, src := topicIDs(m2.ID); !slices.Equal(ids, []int64{1}) || src != tickets.SourceAuto {
		t.Fatalf("topics %v source %q", ids, src)
	}
	// Detection again replaces its own result.
	if err := assign(m2.ID, tickets.SourceAuto, 2); err != nil {
		t.Fatal(err)
	}
	if err := assign(m2.ID, tickets.SourceManual, 1); err != nil {
		t.Fatal(err)
	}
	if err := assign(m2.ID, tickets.SourceAuto, 2); !errors.Is(err, tickets.ErrManualTopicsKept) {
		t.Fatalf("auto after manual: %v", err)
	}
	if ids, src := topicIDs(m2.ID); !slices.Equal(ids, []int64{1}) || src != tickets.SourceManual {
		t.Fatalf("topics %v source %q", ids, src)
	}

	// An agent confirming the assistant's list makes it manual.
	m3 := msgOpen(t, s, tenantA, "confirmed")
	if err := assign(m3.ID, tickets.SourceAuto, 1); err != nil {
		t.Fatal(err)
	}
	if err := assign(m3.ID, tickets.SourceManual, 1); err != nil {
		t.Fatal(err)
	}
	if err := assign(m3.ID, tickets.SourceAuto, 2); !errors.Is(err, tickets.ErrManualTopicsKept) {
		t.Fatalf("auto after a confirmation: %v", err)
	}
}

// countingSummarizer summarises as "summary N of <k> turns".
type countingSummarizer struct{ calls int }

func (c *countingSummarizer) Summarize(_ context.Context, subject, status string, turns []assistant.Turn) (string, assistant.Provenance, error) {
	c.calls++
	return subject + "/" + status + "/" + string(rune('0'+len(turns))), assistant.Provenance{Engine: "openai-compatible", Model: "m1"}, nil
}

// The summary is computed once and cached until the ticket gets a new
// message (or another status).
func TestSummaryCache(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	m := msgOpen(t, s, tenantA, "first")
	engine := &countingSummarizer{}
	sums := tickets.NewSummaries(s, engine, func() time.Time { return clock })
	get := func(want string, calls int) {
		t.Helper()
		got, err := sums.Summary(ctx, tenantA, m.TicketID)
		if err != nil || got != want || engine.calls != calls {
			t.Fatalf("summary %q (%v) after %d calls; want %q after %d", got, err, engine.calls, want, calls)
		}
	}
	get("Help/Open/1", 1)
	get("Help/Open/1", 1)
	var engineCol, model string
	if err := pool.QueryRow(ctx, `SELECT engine, model FROM ticket_summaries WHERE ticket_id = $1`, m.TicketID).Scan(&engineCol, &model); err != nil ||
		engineCol != "openai-compatible" || model != "m1" {
		t.Fatalf("cached row %q %q %v", engineCol, model, err)
	}
	if _, err := s.AddMessage(ctx, tenantA, m.TicketID, tickets.MessageInto(tickets.NewMessage{SenderType: tickets.SenderAgent, Text: "answer",
		CustomFields: json.RawMessage(`{}`)}, storeClock)); err != nil {
		t.Fatal(err)
	}
	get("Help/Open/2", 2)
	get("Help/Open/2", 2)
	msgSetStatus(t, pool, m.TicketID, tickets.StatusResolved)
	get("Help/Resolved/2", 3)

	if _, err := sums.Summary(ctx, tenantB, m.TicketID); err == nil {
		t.Fatal("another customer's ticket was summarised")
	}
	// An older computation finishing late does not replace a newer one.
	if err := s.SaveSummary(ctx, tenantA, m.TicketID, tickets.TicketSummary{Text: "stale", LastMessageID: m.ID,
		Status: tickets.StatusOpen, Provenance: offlineBM25, CreatedAt: clock}); err != nil {
		t.Fatal(err)
	}
	get("Help/Resolved/2", 3)

	// Without an engine: the extractive summary.
	extractive, err := tickets.NewSummaries(s, nil, time.Now).Summary(ctx, tenantA, msgOpen(t, s, tenantA, "other").TicketID)
	if err != nil || extractive == "" {
		t.Fatalf("extractive %q %v", extractive, err)
	}
}

// The report counts per engine and model within the window: prepared,
// sent as prepared, modified, escalations and dislikes.
func TestFeedbackReport(t *testing.T) {
	pool := pgtest.NewSchema(t, postgres.Schema, postgres.Migrations())
	ctx := context.Background()
	now := clock
	s := postgres.New(pool, func() time.Time { return now })
	llm := assistant.Provenance{Engine: "openai-compatible", Model: "m1"}
	prepare := func(p assistant.Provenance, at time.Time) tickets.Message {
		now = at
		m := msgOpen(t, s, tenantA, "question")
		r := preparedReply("answer")
		r.Provenance = p
		if saved, err := s.SavePreparedReply(ctx, tenantA, m.ID, r); err != nil || !saved {
			t.Fatal(saved, err)
		}
		return m
	}
	token := func(ticketID int64) string {
		var tok string
		if err := pool.QueryRow(ctx, `SELECT ticket_token FROM tickets WHERE ticket_id = $1`, ticketID).Scan(&tok); err != nil {
			t.Fatal(err)
		}
		return tok
	}
	day := func(d int) time.Time { return clock.AddDate(0, 0, d) }

	a := prepare(offlineBM25, day(0)) // sent as prepared, the sent reply disliked
	sent, err := sendReply(ctx, s, tenantA, a.ID, tickets.ReplyInput{AccountID: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Vote(ctx, sent.ID, token(a.TicketID), "dislike"); err != nil {
		t.Fatal(err)
	}
	b := prepare(offlineBM25, day(1)) // modified, escalated twice, the message liked
	if _, err := sendReply(ctx, s, tenantA, b.ID, tickets.ReplyInput{ModifiedAnswer: "mine", AccountID: 5}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := escalate(ctx, s, tenantA, b.ID, tickets.Escalation{Comment: "wrong", Email: "a@example.com"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Vote(ctx, b.ID, token(b.TicketID), "like"); err != nil {
		t.Fatal(err)
	}
	c := prepare(llm, day(2)) // prepared only, the message disliked
	if _, err := s.Vote(ctx, c.ID, token(c.TicketID), "dislike"); err != nil {
		t.Fatal(err)
	}
	prepare(llm, day(5))
	// Another customer's replies and replies an agent wrote do not count.
	now = day(1)
	other := msgOpen(t, s, tenantB, "theirs")
	if _, err := s.SavePreparedReply(ctx, tenantB, other.ID, preparedReply("x")); err != nil {
		t.Fatal(err)
	}
	if err := msgPatch(t, s, tenantA, msgOpen(t, s, tenantA, "agent").ID, `{"aiReply":{"text":"by hand"}}`); err != nil {
		t.Fatal(err)
	}

	report := func(w tickets.FeedbackWindow) []tickets.EngineFeedback {
		t.Helper()
		out, err := s.FeedbackReport(ctx, tenantA, w)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	got := report(tickets.FeedbackWindow{})
	want := []tickets.EngineFeedback{
		{Provenance: offlineBM25, Prepared: 2, SentAsPrepared: 1, Modified: 1, Escalations: 2, Dislikes: 1},
		{Provenance: llm, Prepared: 2, Dislikes: 1},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("report %+v\nwant %+v", got, want)
	}
	from, before := day(1), day(3)
	got = report(tickets.FeedbackWindow{From: &from, Before: &before})
	want = []tickets.EngineFeedback{
		{Provenance: offlineBM25, Prepared: 1, Modified: 1, Escalations: 2},
		{Provenance: llm, Prepared: 1, Dislikes: 1},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("windowed report %+v\nwant %+v", got, want)
	}
	if got := report(tickets.FeedbackWindow{Before: &from}); len(got) != 1 || got[0].Prepared != 1 || got[0].SentAsPrepared != 1 {
		t.Fatalf("before day 1: %+v", got)
	}
	if got, err := s.FeedbackReport(ctx, 99, tickets.FeedbackWindow{}); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("a customer without replies: %v %v", got, err)
	}
}
