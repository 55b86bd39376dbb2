// Package worker is the assistant's work on messages: for a new end-user
// message it detects the topics (when the message has none), ranks the
// prompt documents and prepares a reply; for a detection request it
// detects the topics. Everything is written through the tickets store and
// services (the same paths as the API, events through the outbox); the
// engine is an assistant.Engine. Start consumes the two event types from
// EVENTS with durable consumers.
package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"supportplatform.dev/ai/langcode"
	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/services/tickets/internal/assistant"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// Store reads messages and stores prepared replies (package postgres).
type Store interface {
	Message(ctx context.Context, customerID, id int64) (tickets.Message, error)
	Conversation(ctx context.Context, customerID, id int64) (tickets.Ticket, []tickets.Message, error)
	EndUser(ctx context.Context, customerID, id int64) (tickets.EndUser, error)
	SavePreparedReply(ctx context.Context, customerID, id int64, r tickets.PreparedReply) (bool, error)
}

// Assigner assigns topics the way PUT .../topics does
// (tickets.Messages.AssignTopics).
type Assigner interface {
	AssignTopics(ctx context.Context, customerID, id int64, topicIDs []int64, source string) error
}

// Lookups asks topics for the customer's topics and their documents
// (package lookup).
type Lookups interface {
	TopicsAll(ctx context.Context, customerID int64) ([]contracts.TopicSummary, error)
	TopicDocuments(ctx context.Context, customerID int64, topicIDs []int64, limit int) ([]contracts.LinkedDocument, error)
}

// Options configure a Worker.
type Options struct {
	Metrics *Metrics
	Log     *slog.Logger
	// DefaultLanguage is the reply's language when neither the message nor
	// the end user tells one (default "en").
	DefaultLanguage string
}

// Worker does the assistant's work on messages.
type Worker struct {
	store  Store
	assign Assigner
	look   Lookups
	engine assistant.Engine
	o      Options
}

// New returns a worker.
func New(store Store, assign Assigner, look Lookups, engine assistant.Engine, o Options) *Worker {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.DefaultLanguage == "" {
		o.DefaultLanguage = "en"
	}
	return &Worker{store: store, assign: assign, look: look, engine: o.Metrics.instrument(engine), o: o}
}

// Work kinds and outcomes (the assistant_work_total metric's labels).
const (
	KindDetect = "detect"
	KindReply  = "reply"

	OutcomeAssigned   = "assigned"    // topics were assigned
	OutcomeNoTopic    = "no-topic"    // no topic reached the threshold, or the customer has none
	OutcomeManualKept = "manual-kept" // the message's topics were set manually
	OutcomePrepared   = "prepared"    // a reply was stored
	OutcomeNoReply    = "no-reply"    // the engine prepared none (nothing to ground it in)
	OutcomeKept       = "kept"        // a reply was prepared, sent or modified already
	OutcomeGone       = "gone"        // the message was deleted
	OutcomeError      = "error"       // redelivered
)

// progressFunc tells JetStream the handling is alive (an in-progress
// acknowledgement), before each engine call.
type progressFunc func()

// HandleMessageCreated works on ticket.message.created: for an end user's
// message, topic detection when it has no topics (and never had manual
// ones), then a prepared reply unless it has one. Handling an event again
// repeats only what is not done yet. An error is worth a redelivery.
func (w *Worker) HandleMessageCreated(ctx context.Context, ev contracts.Event[contracts.MessageChanged], progress func()) error {
	if ev.Data.SenderType != string(tickets.SenderEndUser) || ev.CustomerID <= 0 || ev.Data.MessageID <= 0 {
		return nil
	}
	if progress == nil {
		progress = func() {}
	}
	m, err := w.store.Message(ctx, ev.CustomerID, ev.Data.MessageID)
	if apperr.Is(err, apperr.NotFound) {
		w.o.Metrics.done(KindReply, OutcomeGone)
		return nil
	}
	if err != nil {
		return err
	}
	if len(m.Topics) == 0 && m.TopicsSource != tickets.SourceManual {
		outcome, err := w.detect(ctx, ev.CustomerID, m, progress)
		w.o.Metrics.done(KindDetect, outcomeOf(outcome, err))
		if err != nil {
			return fmt.Errorf("topic detection of message %d: %w", m.ID, err)
		}
		if outcome == OutcomeGone {
			return nil
		}
		if outcome == OutcomeAssigned {
			// The prompt documents come from the topics just assigned.
			if m, err = w.store.Message(ctx, ev.CustomerID, m.ID); err != nil {
				if apperr.Is(err, apperr.NotFound) {
					return nil
				}
				return err
			}
		}
	}
	if m.AIReply.Status != tickets.AIReplyNone && m.AIReply.Status != tickets.AIReplyPending {
		w.o.Metrics.done(KindReply, OutcomeKept)
		return nil
	}
	outcome, err := w.prepare(ctx, ev.CustomerID, ev.Data.Language, m, progress)
	w.o.Metrics.done(KindReply, outcomeOf(outcome, err))
	if err != nil {
		return fmt.Errorf("reply to message %d: %w", m.ID, err)
	}
	return nil
}

// HandleDetectionRequested works on
// ticket.message.topic-detection.requested: the same detection, whatever
// the message's sender and topics (an automatic result still never
// replaces manual topics).
func (w *Worker) HandleDetectionRequested(ctx context.Context, ev contracts.Event[contracts.TopicDetectionRequested], progress func()) error {
	if ev.CustomerID <= 0 || ev.Data.MessageID <= 0 {
		return nil
	}
	if progress == nil {
		progress = func() {}
	}
	m, err := w.store.Message(ctx, ev.CustomerID, ev.Data.MessageID)
	if apperr.Is(err, apperr.NotFound) {
		w.o.Metrics.done(KindDetect, OutcomeGone)
		return nil
	}
	if err != nil {
		return err
	}
	outcome, err := w.detect(ctx, ev.CustomerID, m, progress)
	w.o.Metrics.done(KindDetect, outcomeOf(outcome, err))
	if err != nil {
		return fmt.Errorf("topic detection of message %d: %w", m.ID, err)
	}
	return nil
}

func outcomeOf(outcome string, err error) string {
	if err != nil {
		return OutcomeError
	}
	return outcome
}

// maxLookupTopics is how many topic ids one TopicDocuments request may
// name (topics' MaxLookupIDs).
const maxLookupTopics = 1000

// detect scores the customer's live topics for the message and assigns
// those at or above assistant.TopicThreshold, best first, at most
// assistant.MaxAutoTopics, with source auto.
func (w *Worker) detect(ctx context.Context, customerID int64, m tickets.Message, progress progressFunc) (string, error) {
	all, err := w.look.TopicsAll(ctx, customerID)
	if err != nil {
		return "", err
	}
	if len(all) == 0 {
		return OutcomeNoTopic, nil
	}
	topics := make([]assistant.Topic, len(all))
	index := make(map[int64]int, len(all))
	ids := make([]int64, len(all))
	for i, t := range all {
		topics[i] = assistant.Topic{TopicID: t.TopicID, Name: t.Name, Description: t.Description}
		index[t.TopicID] = i
		ids[i] = t.TopicID
	}
	for chunk := range slices.Chunk(ids, maxLookupTopics) {
		docs, err := w.look.TopicDocuments(ctx, customerID, chunk, 0)
		if err != nil {
			return "", err
		}
		for _, d := range docs {
			if i, ok := index[d.TopicID]; ok {
				topics[i].Documents = append(topics[i].Documents, assistant.Document{DocumentID: d.DocumentID, TopicID: d.TopicID,
					Title: d.Title, Content: d.Content, Relevance: d.RelevanceScore})
			}
		}
	}
	progress()
	scores, _, err := w.engine.DetectTopics(ctx, m.Text, topics)
	if err != nil {
		return "", err
	}
	chosen := Choose(scores, index)
	if len(chosen) == 0 {
		return OutcomeNoTopic, nil
	}
	err = w.assign.AssignTopics(ctx, customerID, m.ID, chosen, tickets.SourceAuto)
	switch {
	case errors.Is(err, tickets.ErrManualTopicsKept):
		return OutcomeManualKept, nil
	case apperr.Is(err, apperr.NotFound):
		return OutcomeGone, nil
	case err != nil:
		// A topic deleted since TopicsAll is a 400 here: the redelivery
		// detects among the topics as they are then.
		return "", err
	}
	return OutcomeAssigned, nil
}

// Choose picks the topics to assign from an engine's scores: those of
// known (live, the customer's) topics scoring at least
// assistant.TopicThreshold, best first (ties by topic id), at most
// assistant.MaxAutoTopics.
func Choose(scores []assistant.TopicScore, known map[int64]int) []int64 {
	ok := make([]assistant.TopicScore, 0, len(scores))
	seen := map[int64]bool{}
	for _, s := range scores {
		if _, live := known[s.TopicID]; live && !seen[s.TopicID] && s.Score >= assistant.TopicThreshold {
			seen[s.TopicID] = true
			ok = append(ok, s)
		}
	}
	slices.SortStableFunc(ok, func(a, b assistant.TopicScore) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.TopicID, b.TopicID))
	})
	var out []int64
	for _, s := range ok[:min(len(ok), assistant.MaxAutoTopics)] {
		out = append(out, s.TopicID)
	}
	return out
}

// maxHistory is how many earlier messages of the ticket a reply request
// carries (the newest).
const maxHistory = 20

// prepare ranks the message's prompt documents and has the engine write
// the reply in the end user's language, addressed to them by name.
func (w *Worker) prepare(ctx context.Context, customerID int64, eventLanguage string, m tickets.Message, progress progressFunc) (string, error) {
	progress()
	docs, _, err := tickets.RankPromptDocuments(ctx, w.look, w.engine, customerID, m)
	if err != nil {
		return "", err
	}
	t, msgs, err := w.store.Conversation(ctx, customerID, m.TicketID)
	if apperr.Is(err, apperr.NotFound) {
		return OutcomeGone, nil
	}
	if err != nil {
		return "", err
	}
	var history []assistant.Turn
	for _, h := range msgs {
		if h.ID < m.ID {
			history = append(history, assistant.Turn{SenderType: string(h.SenderType), Text: h.Text})
		}
	}
	history = history[max(0, len(history)-maxHistory):]
	user, err := w.store.EndUser(ctx, customerID, t.EndUserID)
	if err != nil && !apperr.Is(err, apperr.NotFound) {
		return "", err
	}
	req := assistant.ReplyRequest{Message: m.Text, Subject: t.Subject, History: history, EndUserName: user.Name,
		Language: w.language(eventLanguage, user.Language), Documents: docs}
	progress()
	reply, prov, err := w.engine.PrepareReply(ctx, req)
	if err != nil {
		return "", err
	}
	text := strings.TrimSpace(reply.Text)
	if text == "" {
		return OutcomeNoReply, nil
	}
	saved, err := w.store.SavePreparedReply(ctx, customerID, m.ID, tickets.PreparedReply{Text: text, Provenance: prov, Documents: docs})
	switch {
	case apperr.Is(err, apperr.NotFound):
		return OutcomeGone, nil
	case err != nil:
		return "", err
	case !saved:
		return OutcomeKept, nil
	}
	return OutcomePrepared, nil
}

// language is the reply's language: the one detected in the message (the
// event's), else the end user's (as ISO 639-1 when it has one), else the
// default.
func (w *Worker) language(detected, endUser string) string {
	if detected != "" {
		return detected
	}
	if endUser != "" {
		if code, ok := langcode.ISO6391(endUser); ok {
			return code
		}
		return endUser
	}
	return w.o.DefaultLanguage
}

// handleTimeout bounds one handling when the consumer sets none.
const handleTimeout = 5 * time.Minute
