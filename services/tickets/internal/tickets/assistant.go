package tickets

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/services/tickets/internal/assistant"
)

// What the tickets context keeps of the assistant's work (issue 11): the
// source of a message's topics, the provenance and prompt documents of a
// prepared reply, cached ticket summaries and the feedback report. The
// engines are behind assistant.Engine; the assistant binary
// (cmd/assistant) runs them on new messages.

// Bounds of the prompt documents.
const (
	// MaxCandidateDocuments is how many documents linked to a message's
	// topics are asked of topics (most relevant first) before re-ranking.
	MaxCandidateDocuments = 20
	// charsPerToken estimates tokens from characters (PromptTokenBudget).
	charsPerToken = 4
)

// Ranker orders documents by similarity to a text (an assistant.Engine).
type Ranker interface {
	RankDocuments(ctx context.Context, text string, docs []assistant.Document) ([]assistant.RankedDocument, assistant.Provenance, error)
}

// Summarizer tells a conversation in a few sentences (an assistant.Engine).
type Summarizer interface {
	Summarize(ctx context.Context, subject, status string, turns []assistant.Turn) (string, assistant.Provenance, error)
}

// DocumentLookups lists the documents linked to topics (package lookup).
type DocumentLookups interface {
	TopicDocuments(ctx context.Context, customerID int64, topicIDs []int64, limit int) ([]contracts.LinkedDocument, error)
}

// PreparedReply is a reply the assistant prepared for a message, with
// what produced it and the documents it was grounded in.
type PreparedReply struct {
	Text       string
	Provenance assistant.Provenance
	Documents  []assistant.RankedDocument
}

// PromptDocumentsResult is GET .../prompt-documents: the documents used for
// the prepared reply (Stored) or the current ranking, with what ranked
// them.
type PromptDocumentsResult struct {
	Documents  []PromptDocument
	Provenance assistant.Provenance
	// Stored: the documents are those the prepared reply was grounded in.
	Stored bool
}

// CandidateDocuments are the documents linked to the message's topics
// (topics' TopicDocuments: each once, most relevant first, at most
// MaxCandidateDocuments); none when the message has no topics.
func CandidateDocuments(ctx context.Context, look DocumentLookups, customerID int64, m Message) ([]assistant.Document, error) {
	if len(m.Topics) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(m.Topics))
	for i, t := range m.Topics {
		ids[i] = t.TopicID
	}
	linked, err := look.TopicDocuments(ctx, customerID, ids, MaxCandidateDocuments)
	if err != nil {
		return nil, err
	}
	out := make([]assistant.Document, 0, len(linked))
	seen := map[int64]bool{}
	for _, d := range linked {
		if seen[d.DocumentID] || len(out) == MaxCandidateDocuments {
			continue
		}
		seen[d.DocumentID] = true
		out = append(out, assistant.Document{DocumentID: d.DocumentID, TopicID: d.TopicID, Title: d.Title,
			Content: d.Content, Relevance: d.RelevanceScore})
	}
	return out, nil
}

// RankPromptDocuments ranks the message's candidate documents by
// similarity to its text with ranker and keeps the best
// (SelectPromptDocuments).
func RankPromptDocuments(ctx context.Context, look DocumentLookups, ranker Ranker, customerID int64, m Message) ([]assistant.RankedDocument, assistant.Provenance, error) {
	docs, err := CandidateDocuments(ctx, look, customerID, m)
	if err != nil || len(docs) == 0 {
		return nil, assistant.Provenance{}, err
	}
	ranked, prov, err := ranker.RankDocuments(ctx, m.Text, docs)
	if err != nil {
		return nil, prov, err
	}
	return SelectPromptDocuments(ranked), prov, nil
}

// SelectPromptDocuments keeps the best of ranked (best first): at most
// assistant.PromptDocuments whose titles and contents fit in
// assistant.PromptTokenBudget (about 4 characters a token). A document
// that does not fit is passed over for a shorter one after it; the best
// document is always kept, its content cut to the budget when it alone is
// larger.
func SelectPromptDocuments(ranked []assistant.RankedDocument) []assistant.RankedDocument {
	budget := assistant.PromptTokenBudget * charsPerToken
	var out []assistant.RankedDocument
	for _, d := range ranked {
		if len(out) == assistant.PromptDocuments {
			break
		}
		size := utf8.RuneCountInString(d.Title) + utf8.RuneCountInString(d.Content)
		if size > budget {
			if len(out) > 0 {
				continue
			}
			d.Content = cutRunes(d.Content, max(budget-utf8.RuneCountInString(d.Title), 0))
			size = budget
		}
		budget -= size
		out = append(out, d)
	}
	return out
}

func cutRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// PromptDocuments returns the documents the message's prepared reply was
// grounded in, when the assistant prepared one; otherwise the current
// ranking of the documents linked to its topics (by the ranker the service
// was given, the offline engine in the API; without one, by the links'
// relevance). Empty when the message has no topics.
func (s *Messages) PromptDocuments(ctx context.Context, customerID, id int64) (PromptDocumentsResult, error) {
	m, err := s.store.Message(ctx, customerID, id)
	if err != nil {
		return PromptDocumentsResult{}, err
	}
	if m.AIReply.Provenance != nil {
		return PromptDocumentsResult{Documents: slices.Clone(m.AIReply.Documents), Provenance: *m.AIReply.Provenance, Stored: true}, nil
	}
	out := PromptDocumentsResult{Documents: []PromptDocument{}}
	var ranked []assistant.RankedDocument
	if s.ranker != nil {
		ranked, out.Provenance, err = RankPromptDocuments(ctx, s.look, s.ranker, customerID, m)
	} else {
		var docs []assistant.Document
		docs, err = CandidateDocuments(ctx, s.look, customerID, m)
		for _, d := range docs {
			ranked = append(ranked, assistant.RankedDocument{Document: d})
		}
		ranked = SelectPromptDocuments(ranked)
	}
	if err != nil {
		return PromptDocumentsResult{}, err
	}
	for _, d := range ranked {
		out.Documents = append(out.Documents, PromptDocument{DocumentID: d.DocumentID, Title: d.Title, Content: d.Content, Score: d.Score})
	}
	return out, nil
}

// ---- Summaries ----

// TicketSummary is a ticket's cached summary: valid while the ticket's
// newest message is LastMessageID and its status Status.
type TicketSummary struct {
	Text          string
	LastMessageID int64
	Status        Status
	Provenance    assistant.Provenance
	CreatedAt     time.Time
}

// SummaryState is what decides whether a cached summary is current.
type SummaryState struct {
	// LastMessageID is the ticket's newest message (0: none).
	LastMessageID int64
	Status        Status
	// Cached is the stored summary, nil when there is none.
	Cached *TicketSummary
}

// Current tells whether the cached summary still tells the ticket as it is.
func (s SummaryState) Current() bool {
	return s.Cached != nil && s.Cached.LastMessageID == s.LastMessageID && s.Cached.Status == s.Status
}

// SummaryStore keeps the cached summaries.
type SummaryStore interface {
	SummaryState(ctx context.Context, customerID, ticketID int64) (SummaryState, error)
	Conversation(ctx context.Context, customerID, id int64) (Ticket, []Message, error)
	// SaveSummary stores s unless a summary of a newer message is stored.
	SaveSummary(ctx context.Context, customerID, ticketID int64, s TicketSummary) error
}

// Summaries computes ticket summaries with an engine and caches them.
type Summaries struct {
	store  SummaryStore
	engine Summarizer
	now    func() time.Time
}

// NewSummaries returns the summary service; a nil engine makes the
// extractive summary (Summarize).
func NewSummaries(store SummaryStore, engine Summarizer, now func() time.Time) *Summaries {
	return &Summaries{store: store, engine: engine, now: now}
}

// ExtractiveProvenance names the summary Summarize makes.
var ExtractiveProvenance = assistant.Provenance{Engine: "offline", Model: "extractive-v1"}

// Summary returns the ticket's summary: the cached one while the ticket
// has no new message (and the same status), else a new one from the
// engine, which is cached.
func (s *Summaries) Summary(ctx context.Context, customerID, id int64) (string, error) {
	st, err := s.store.SummaryState(ctx, customerID, id)
	if err != nil {
		return "", err
	}
	if st.Current() {
		return st.Cached.Text, nil
	}
	t, msgs, err := s.store.Conversation(ctx, customerID, id)
	if err != nil {
		return "", err
	}
	// Keyed by the state read before the conversation: a message added in
	// between makes the next request compute the summary again.
	sum := TicketSummary{LastMessageID: st.LastMessageID, Status: st.Status, CreatedAt: s.now()}
	if s.engine == nil {
		sum.Text, sum.Provenance = Summarize(t, msgs), ExtractiveProvenance
	} else {
		sum.Text, sum.Provenance, err = s.engine.Summarize(ctx, t.Subject, string(t.Status), Turns(msgs))
		if err != nil {
			return "", err
		}
		if strings.TrimSpace(sum.Text) == "" {
			return "", apperr.E(apperr.Unavailable, "the assistant made no summary")
		}
	}
	// The summary is the answer even when caching it fails: the next
	// request computes it again.
	_ = s.store.SaveSummary(ctx, customerID, id, sum)
	return sum.Text, nil
}

// Turns are messages as the engines read a conversation.
func Turns(msgs []Message) []assistant.Turn {
	out := make([]assistant.Turn, len(msgs))
	for i, m := range msgs {
		out[i] = assistant.Turn{SenderType: string(m.SenderType), Text: m.Text}
	}
	return out
}

// ---- Feedback report ----

// EngineFeedback is the feedback on one engine and model's prepared
// replies (GET /api/Assistant/feedback).
type EngineFeedback struct {
	assistant.Provenance
	// Prepared replies; of them sent as prepared and sent modified.
	Prepared, SentAsPrepared, Modified int
	// Escalations are the escalation comments (aiFeedbackComments) on the
	// messages the replies answer; Dislikes the end users' dislikes of
	// those messages or of the replies sent.
	Escalations, Dislikes int
}

// FeedbackWindow bounds the report by the time replies were prepared:
// From inclusive, Before exclusive; nil is open.
type FeedbackWindow struct {
	From, Before *time.Time
}

// FeedbackReportStore counts the feedback on the assistant's replies.
type FeedbackReportStore interface {
	FeedbackReport(ctx context.Context, customerID int64, w FeedbackWindow) ([]EngineFeedback, error)
}

// AssistantFeedback is the assistant's feedback report.
type AssistantFeedback struct{ store FeedbackReportStore }

// NewAssistantFeedback returns the report on store.
func NewAssistantFeedback(store FeedbackReportStore) *AssistantFeedback {
	return &AssistantFeedback{store: store}
}

// Report counts the feedback on the customer's prepared replies, per
// engine and model.
func (a *AssistantFeedback) Report(ctx context.Context, customerID int64, w FeedbackWindow) ([]EngineFeedback, error) {
	if w.From != nil && w.Before != nil && !w.Before.After(*w.From) {
		return nil, apperr.Field("to", "must not be before from", "invalid window")
	}
	return a.store.FeedbackReport(ctx, customerID, w)
}

// PromptDocument is knowledge-base context for answering a message.
type PromptDocument struct {
	DocumentID int64
	Title      string
	Content    string
	// Score is the document's similarity to the message, in [0, 1] (0
	// when it was ordered by the links' relevance alone).
	Score float64
}
