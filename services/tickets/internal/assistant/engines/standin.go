package engines

// STAND-IN, to be deleted by the lead when packages offline and llm land:
// a minimal deterministic engine so that the binaries build and run before
// the real engines are merged. It detects topics and ranks documents by
// the share of their words found in the text, prepares no reply (it has
// nothing to ground one in honestly) and summarises extractively.

import (
	"context"
	"slices"
	"strings"
	"unicode"

	"supportplatform.dev/services/tickets/internal/assistant"
	"supportplatform.dev/services/tickets/internal/tickets"
)

var standInProvenance = assistant.Provenance{Engine: "offline", Model: "stand-in"}

type standIn struct{}

func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len([]rune(w)) > 2 {
			out[w] = true
		}
	}
	return out
}

// overlap is the share of the words of ref found in text.
func overlap(text map[string]bool, ref string) float64 {
	r := words(ref)
	if len(r) == 0 {
		return 0
	}
	n := 0
	for w := range r {
		if text[w] {
			n++
		}
	}
	return float64(n) / float64(len(r))
}

func (standIn) DetectTopics(_ context.Context, text string, topics []assistant.Topic) ([]assistant.TopicScore, assistant.Provenance, error) {
	tw := words(text)
	out := make([]assistant.TopicScore, len(topics))
	for i, t := range topics {
		out[i] = assistant.TopicScore{TopicID: t.TopicID, Score: max(overlap(tw, t.Name), overlap(tw, t.Name+" "+t.Description))}
	}
	slices.SortStableFunc(out, func(a, b assistant.TopicScore) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return out, standInProvenance, nil
}

func (standIn) RankDocuments(_ context.Context, text string, docs []assistant.Document) ([]assistant.RankedDocument, assistant.Provenance, error) {
	tw := words(text)
	out := make([]assistant.RankedDocument, len(docs))
	for i, d := range docs {
		out[i] = assistant.RankedDocument{Document: d, Score: overlap(tw, d.Title+" "+d.Content)}
	}
	slices.SortStableFunc(out, func(a, b assistant.RankedDocument) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return out, standInProvenance, nil
}

func (standIn) PrepareReply(_ context.Context, r assistant.ReplyRequest) (assistant.Reply, assistant.Provenance, error) {
	return assistant.Reply{Language: r.Language}, standInProvenance, nil
}

func (standIn) Summarize(_ context.Context, subject, status string, turns []assistant.Turn) (string, assistant.Provenance, error) {
	msgs := make([]tickets.Message, len(turns))
	for i, t := range turns {
		msgs[i] = tickets.Message{ID: int64(i + 1), SenderType: tickets.SenderType(t.SenderType), Text: t.Text}
	}
	return tickets.Summarize(tickets.Ticket{Subject: subject, Status: tickets.Status(status)}, msgs), tickets.ExtractiveProvenance, nil
}
