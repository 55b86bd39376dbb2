// Package offline is the assistant's offline engine: BM25 retrieval and
// classification over a customer's topics and documents, replies composed
// from the best-matching document passages, and the tickets domain's
// extractive summary. It is deterministic, needs no network and no model,
// and is always available, which makes it the fallback of the LLM engine.
//
// It is honest about what it is: every result says Engine "offline", Model
// "bm25-v1", and a reply it cannot ground in a document passage is not
// prepared at all (an empty Reply) rather than invented.
package offline

import (
	"cmp"
	"context"
	"hash/maphash"
	"math"
	"slices"
	"time"

	"supportplatform.dev/ai/mt"
	"supportplatform.dev/services/tickets/internal/assistant"
)

// Provenance is what every result of the engine reports.
var Provenance = assistant.Provenance{Engine: "offline", Model: "bm25-v1"}

// Field weights: the words of a topic's name say the most about it, its
// description next, then its documents' titles and their text.
const (
	weightTopicName        = 3
	weightTopicDescription = 2
	weightTopicDocTitle    = 1.5
	weightTopicDocContent  = 0.5
	weightDocTitle         = 2
	weightDocContent       = 1
)

// Scoring of topics. A topic with BM25 score s, when the best score among
// the other topics is r, scores
//
//	s / (s + r) × (1 - exp(-s / topicScale))
//
// The first factor says how much the topic stands out from its strongest
// rival: a clear winner approaches 1, two topics matched equally get 0.5
// each, the rest little; it does not depend on how many topics a customer
// has. The second says how much evidence there is at all: one common word
// shared with a description is little. A topic sharing no term with the
// text scores 0. topicScale was set on the evaluation set (package eval) so
// that assistant.TopicThreshold assigns the expected topic of most messages
// and rarely a wrong one: with it, a clear winner needs a BM25 score of
// about 2 (two distinctive words) to be assigned, and a runner-up is
// assigned only when it is nearly as strong as the winner.
const topicScale = 3.0

// Scoring of documents and passages: BM25 score s mapped to s / (s + scale),
// which is 0.5 at s = scale and approaches 1 for a strong match.
const (
	docScale     = 6.0
	passageScale = 4.0
	// docPriorWeight is the share of a document's score that comes from its
	// link's Relevance (relative to the best one of the call).
	docPriorWeight = 0.1
)

// cacheTTL and cacheEntries bound what the engine keeps between calls.
const (
	cacheTTL     = 10 * time.Minute
	cacheEntries = 256
	// cacheTextBytes is the budget of each index cache, counted in bytes of
	// the text the indexes were built from (an index takes a few times
	// that: its terms, frequencies and maps).
	cacheTextBytes = 16 << 20
)

// Options configure the engine.
type Options struct {
	// Translator translates messages to English for matching and replies
	// into the end user's language (Apertium offline); nil matches the
	// original text only and answers in English when the documents are.
	Translator mt.Translator
	// Now is the clock of the caches; default time.Now.
	Now func() time.Time
}

// Engine is the offline engine. It is safe for concurrent use.
type Engine struct {
	tr           mt.Translator
	seed         maphash.Seed
	topicIndexes *cache[*bm25Index]
	docIndexes   *cache[*bm25Index]
	translations *cache[[]string]
}

var _ assistant.Engine = (*Engine)(nil)

// New returns an offline engine.
func New(o Options) *Engine {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Engine{
		tr:           o.Translator,
		seed:         maphash.MakeSeed(),
		topicIndexes: newCache[*bm25Index](o.Now, cacheTTL, cacheEntries, cacheTextBytes),
		docIndexes:   newCache[*bm25Index](o.Now, cacheTTL, cacheEntries, cacheTextBytes),
		translations: newCache[[]string](o.Now, cacheTTL, 4*cacheEntries, cacheTextBytes/4),
	}
}

// DetectTopics implements assistant.Engine. A message in another language
// than English is also matched in its English translation when a
// Translator can make one; each topic keeps the better of the two scores.
func (e *Engine) DetectTopics(ctx context.Context, text string, topics []assistant.Topic) ([]assistant.TopicScore, assistant.Provenance, error) {
	ix := e.topicIndex(topics)
	best := make([]float64, len(topics))
	for _, q := range e.queries(ctx, text) {
		for i, s := range topicScores(ix.scores(q)) {
			best[i] = max(best[i], s)
		}
	}
	out := make([]assistant.TopicScore, len(topics))
	for i, t := range topics {
		out[i] = assistant.TopicScore{TopicID: t.TopicID, Score: best[i]}
	}
	slices.SortStableFunc(out, func(a, b assistant.TopicScore) int { return cmp.Compare(b.Score, a.Score) })
	return out, Provenance, ctx.Err()
}

// topicScores turns BM25 scores into [0, 1] (see topicScale).
func topicScores(raw []float64) []float64 {
	// The best and second best scores: each topic's rival is the best of
	// the others.
	first, second := -1, -1
	for i, s := range raw {
		switch {
		case first < 0 || s > raw[first]:
			first, second = i, first
		case second < 0 || s > raw[second]:
			second = i
		}
	}
	out := make([]float64, len(raw))
	for i, s := range raw {
		if s <= 0 {
			continue
		}
		rival := 0.0
		if i != first {
			rival = raw[first]
		} else if second >= 0 {
			rival = raw[second]
		}
		out[i] = s / (s + rival) * (1 - math.Exp(-s/topicScale))
	}
	return out
}

// RankDocuments implements assistant.Engine: BM25 over the documents
// (titles count double) mapped to [0, 1], 90% of the score, plus 10% from
// the link's Relevance relative to the best one among docs.
func (e *Engine) RankDocuments(ctx context.Context, text string, docs []assistant.Document) ([]assistant.RankedDocument, assistant.Provenance, error) {
	ix := e.docIndex(docs)
	sim := make([]float64, len(docs))
	for _, q := range e.queries(ctx, text) {
		for i, s := range ix.scores(q) {
			sim[i] = max(sim[i], s/(s+docScale))
		}
	}
	maxRel := 0
	for _, d := range docs {
		maxRel = max(maxRel, d.Relevance)
	}
	out := make([]assistant.RankedDocument, len(docs))
	for i, d := range docs {
		prior := 0.0
		if maxRel > 0 && d.Relevance > 0 {
			prior = float64(d.Relevance) / float64(maxRel)
		}
		out[i] = assistant.RankedDocument{Document: d, Score: (1-docPriorWeight)*sim[i] + docPriorWeight*prior}
	}
	slices.SortStableFunc(out, func(a, b assistant.RankedDocument) int { return cmp.Compare(b.Score, a.Score) })
	return out, Provenance, ctx.Err()
}

// queries are the term lists a text is matched with: its own, and its
// English translation's when it is in another language and the Translator
// can translate it (a failure leaves the original alone).
func (e *Engine) queries(ctx context.Context, text string) [][]string {
	qs := [][]string{tokens(text)}
	if en, ok := e.toEnglish(ctx, text); ok {
		qs = append(qs, tokens(en))
	}
	return qs
}

func (e *Engine) topicIndex(topics []assistant.Topic) *bm25Index {
	h := newHasher(e.seed, "topics")
	for _, t := range topics {
		h.addInt(t.TopicID)
		h.add(t.Name, t.Description)
		for _, d := range t.Documents {
			h.addInt(d.DocumentID)
			h.add(d.Title, d.Content)
		}
	}
	key := h.sum()
	if ix, ok := e.topicIndexes.get(key); ok {
		return ix
	}
	var size int64
	fields := make([][]field, len(topics))
	for i, t := range topics {
		f := []field{{t.Name, weightTopicName}, {t.Description, weightTopicDescription}}
		for _, d := range t.Documents {
			f = append(f, field{d.Title, weightTopicDocTitle}, field{d.Content, weightTopicDocContent})
		}
		fields[i] = f
		size += textBytes(f)
	}
	ix := newIndex(fields)
	e.topicIndexes.put(key, ix, size)
	return ix
}

func (e *Engine) docIndex(docs []assistant.Document) *bm25Index {
	h := newHasher(e.seed, "documents")
	for _, d := range docs {
		h.addInt(d.DocumentID)
		h.add(d.Title, d.Content)
	}
	key := h.sum()
	if ix, ok := e.docIndexes.get(key); ok {
		return ix
	}
	var size int64
	fields := make([][]field, len(docs))
	for i, d := range docs {
		fields[i] = []field{{d.Title, weightDocTitle}, {d.Content, weightDocContent}}
		size += textBytes(fields[i])
	}
	ix := newIndex(fields)
	e.docIndexes.put(key, ix, size)
	return ix
}
