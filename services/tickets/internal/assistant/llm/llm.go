// Package llm is the assistant engine backed by any OpenAI-compatible server
// (hosted, Ollama, vLLM, llama.cpp): chat completions for topic detection,
// prepared replies and summaries, embeddings for ranking prompt documents.
//
// The model's output is never trusted: JSON answers are parsed strictly and
// checked against what was asked (unknown topics dropped, documents that were
// not given rejected), an invalid answer is asked for once more with a
// correction, and when the server fails or answers nonsense twice the
// fallback engine (the offline one) does the work and its provenance is
// reported. Customer text only ever travels as JSON-encoded data inside a
// delimited block of the user message; the system message says that
// instructions found in data are to be ignored.
package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"

	"supportplatform.dev/ai/langcode"
	"supportplatform.dev/ai/openai"
	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/services/tickets/internal/assistant"
)

// EngineName is the Provenance.Engine of this engine's own results.
const EngineName = "openai-compatible"

// Bounds on what one request carries, so a long ticket or a large knowledge
// base cannot exceed a model's context (about 4 characters a token).
const (
	maxMessageChars     = 8000
	maxSubjectChars     = 500
	maxNameChars        = 200
	maxDescriptionChars = 1000
	maxTitleChars       = 200
	maxTitlesPerTopic   = 5
	maxDocumentChars    = 6000
	maxTurnChars        = 2000
	maxReplyTurns       = 10
	maxSummaryChars     = 12000
	maxEmbedChars       = 4000
	// maxEchoChars bounds the invalid answer sent back with a correction.
	maxEchoChars = 2000
)

// Output bounds of the calls (visible tokens; a reasoning model's
// allowance, AI_REASONING_TOKENS, comes on top).
const (
	replyMaxTokens   = 2048
	summaryMaxTokens = 1024
)

// topicsMaxTokens bounds a detection answer: about ten tokens a scored
// topic ({"topicID":12,"score":0.85},), doubled, and room for the frame.
func topicsMaxTokens(topics int) int { return 256 + 20*topics }

// promptBudget is the prompt tokens a call with output bound maxTokens may
// use: the model's context (AI_CONTEXT_TOKENS) less that output, less room
// for one correction round (the invalid answer echoed and the correction).
func (e *Engine) promptBudget(maxTokens int) int {
	return e.client.PromptBudget(maxTokens) - maxEchoChars/3 - correctionTokens
}

// correctionTokens is the size of a correction message with its framing.
const correctionTokens = 128

// Options configure an Engine.
type Options struct {
	// Client is the chat-completions client (AI_BASE_URL, AI_MODEL,
	// AI_API_KEY, AI_TIMEOUT, AI_MAX_RETRIES). Nil or unconfigured, every
	// call goes to Fallback.
	Client *openai.Client
	// EmbeddingModel enables similarity ranking of documents through
	// POST {base}/embeddings (AI_EMBEDDING_MODEL); empty, ranking is the
	// fallback's.
	EmbeddingModel string
	// Fallback does the work when the server fails or answers invalid
	// output twice; in production the offline engine. Without one, such
	// failures are returned as apperr.Unavailable.
	Fallback assistant.Engine
	Log      *slog.Logger
}

// Engine is the OpenAI-compatible assistant engine. It is safe for
// concurrent use.
type Engine struct {
	client         *openai.Client
	embeddingModel string
	fallback       assistant.Engine
	log            *slog.Logger
}

var _ assistant.Engine = (*Engine)(nil)

// New returns an engine calling o.Client and falling back to o.Fallback.
func New(o Options) *Engine {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Engine{
		client:         o.Client,
		embeddingModel: strings.TrimSpace(o.EmbeddingModel),
		fallback:       o.Fallback,
		log:            o.Log,
	}
}

func (e *Engine) provenance() assistant.Provenance {
	return assistant.Provenance{Engine: EngineName, Model: e.client.Model()}
}

func (e *Engine) configured() bool { return e.client != nil && e.client.Configured() }

// run calls own and, when it fails for any reason but the caller's own
// cancellation or deadline, fb. A caller whose context has ended gets the
// error: it will not use a result anyway, and a worker's redelivery is
// better served by the LLM than by a fallback computed during shutdown.
func run[T any](ctx context.Context, e *Engine, op string,
	own func() (T, error), fb func() (T, assistant.Provenance, error)) (T, assistant.Provenance, error) {
	var zero T
	if !e.configured() {
		if e.fallback == nil {
			return zero, assistant.Provenance{}, apperr.Wrap(apperr.Unavailable, openai.ErrNotConfigured, "the AI assistant is not configured")
		}
		return fb()
	}
	v, err := own()
	if err == nil {
		return v, e.provenance(), nil
	}
	if ctx.Err() != nil {
		return zero, e.provenance(), fmt.Errorf("llm: %s: %w", op, err)
	}
	if e.fallback == nil {
		return zero, e.provenance(), apperr.Wrap(apperr.Unavailable, err, "the AI assistant is unavailable")
	}
	e.log.Warn("assistant llm engine failed, using the fallback engine", "op", op, "model", e.client.Model(), "error", err)
	return fb()
}

// InvalidAnswerError is a model answer that failed validation twice (the
// first answer and the answer to the correction).
type InvalidAnswerError struct {
	Op     string
	Reason string
}

func (e *InvalidAnswerError) Error() string {
	return "llm: " + e.Op + ": invalid model answer after a correction: " + e.Reason
}

// ask sends msgs and parses the answer; an answer parse rejects is followed
// by one correction request quoting the reason.
func ask[T any](ctx context.Context, e *Engine, op string, msgs []openai.Message,
	parse func(string) (T, error), opts ...openai.CallOption) (T, error) {
	var zero T
	answer, err := e.client.Complete(ctx, msgs, opts...)
	if err != nil {
		return zero, err
	}
	v, perr := parse(answer)
	if perr == nil {
		return v, nil
	}
	e.log.Info("assistant llm engine: invalid answer, asking again", "op", op, "reason", perr.Error())
	msgs = append(slices.Clip(msgs),
		openai.Message{Role: "assistant", Content: truncate(answer, maxEchoChars)},
		openai.Message{Role: "user", Content: correction(perr)})
	answer, err = e.client.Complete(ctx, msgs, opts...)
	if err != nil {
		return zero, err
	}
	v, perr = parse(answer)
	if perr != nil {
		return zero, &InvalidAnswerError{Op: op, Reason: perr.Error()}
	}
	return v, nil
}

// DetectTopics implements assistant.Engine with one chat completion scoring
// every topic.
func (e *Engine) DetectTopics(ctx context.Context, text string, topics []assistant.Topic) ([]assistant.TopicScore, assistant.Provenance, error) {
	return run(ctx, e, "detect-topics",
		func() ([]assistant.TopicScore, error) {
			if len(topics) == 0 {
				return []assistant.TopicScore{}, nil
			}
			maxTokens := topicsMaxTokens(len(topics))
			msgs, err := topicsPrompt(text, topics, e.promptBudget(maxTokens))
			if err != nil {
				return nil, err
			}
			return ask(ctx, e, "detect-topics", msgs, func(s string) ([]assistant.TopicScore, error) {
				return parseTopics(s, topics)
			}, openai.WithTemperature(0), openai.WithMaxTokens(maxTokens), openai.WithJSON("topic_scores", topicsSchema))
		},
		func() ([]assistant.TopicScore, assistant.Provenance, error) {
			return e.fallback.DetectTopics(ctx, text, topics)
		})
}

// PrepareReply implements assistant.Engine: a reply grounded only in
// r.Documents, or Reply{} when they do not answer the message.
func (e *Engine) PrepareReply(ctx context.Context, r assistant.ReplyRequest) (assistant.Reply, assistant.Provenance, error) {
	return run(ctx, e, "prepare-reply",
		func() (assistant.Reply, error) {
			if len(r.Documents) == 0 {
				// Nothing to ground a reply in: the model is not asked to invent one.
				return assistant.Reply{}, nil
			}
			msgs, err := replyPrompt(r, e.promptBudget(replyMaxTokens))
			if err != nil {
				return assistant.Reply{}, err
			}
			return ask(ctx, e, "prepare-reply", msgs, func(s string) (assistant.Reply, error) {
				return parseReply(s, r)
			}, openai.WithTemperature(0.2), openai.WithMaxTokens(replyMaxTokens), openai.WithJSON("prepared_reply", replySchema))
		},
		func() (assistant.Reply, assistant.Provenance, error) {
			return e.fallback.PrepareReply(ctx, r)
		})
}

// Summarize implements assistant.Engine with one chat completion.
func (e *Engine) Summarize(ctx context.Context, subject, status string, turns []assistant.Turn) (string, assistant.Provenance, error) {
	return run(ctx, e, "summarize",
		func() (string, error) {
			msgs, err := summaryPrompt(subject, status, turns, e.promptBudget(summaryMaxTokens))
			if err != nil {
				return "", err
			}
			// A summary cut at the token limit is an error (openai.ErrTruncated), never stored.
			answer, err := e.client.Complete(ctx, msgs, openai.WithTemperature(0), openai.WithMaxTokens(summaryMaxTokens))
			if err != nil {
				return "", err
			}
			s := unwrapAnswer(answer)
			if s == "" {
				return "", errors.New("llm: summarize: empty answer")
			}
			return s, nil
		},
		func() (string, assistant.Provenance, error) {
			return e.fallback.Summarize(ctx, subject, status, turns)
		})
}

// RankDocuments implements assistant.Engine. With an embedding model, a
// document's score is the average of its embedding similarity to text
// (cosine mapped to [0, 1]) and the fallback's score (BM25); without one, or
// when the embeddings fail, the ranking is the fallback's.
func (e *Engine) RankDocuments(ctx context.Context, text string, docs []assistant.Document) ([]assistant.RankedDocument, assistant.Provenance, error) {
	if e.embeddingModel == "" || e.client == nil || strings.TrimSpace(text) == "" || len(docs) == 0 {
		if e.fallback == nil {
			return e.rankByEmbeddings(ctx, text, docs, nil)
		}
		return e.fallback.RankDocuments(ctx, text, docs)
	}
	var (
		base     []assistant.RankedDocument
		baseProv assistant.Provenance
	)
	if e.fallback != nil {
		var err error
		base, baseProv, err = e.fallback.RankDocuments(ctx, text, docs)
		if err != nil {
			if ctx.Err() != nil {
				return nil, baseProv, err
			}
			e.log.Warn("assistant llm engine: fallback ranking failed, ranking by embeddings alone", "error", err)
			base = nil
		}
	}
	ranked, prov, err := e.rankByEmbeddings(ctx, text, docs, base)
	if err == nil {
		if base != nil {
			prov.Model += "+" + baseProv.Model
		}
		return ranked, prov, nil
	}
	if ctx.Err() != nil || base == nil {
		return nil, prov, err
	}
	e.log.Warn("assistant llm engine: embeddings failed, using the fallback ranking", "model", e.embeddingModel, "error", err)
	return base, baseProv, nil
}

// rankByEmbeddings scores docs by embedding similarity, averaged with the
// scores in base when given.
func (e *Engine) rankByEmbeddings(ctx context.Context, text string, docs []assistant.Document, base []assistant.RankedDocument) ([]assistant.RankedDocument, assistant.Provenance, error) {
	prov := assistant.Provenance{Engine: EngineName, Model: e.embeddingModel}
	if e.embeddingModel == "" || e.client == nil {
		return nil, prov, apperr.Wrap(apperr.Unavailable, openai.ErrNotConfigured, "no document ranking is configured")
	}
	if len(docs) == 0 {
		return []assistant.RankedDocument{}, prov, nil
	}
	inputs := make([]string, 0, len(docs)+1)
	inputs = append(inputs, truncate(orPlaceholder(text), maxEmbedChars))
	for _, d := range docs {
		inputs = append(inputs, truncate(orPlaceholder(strings.TrimSpace(d.Title+"\n\n"+d.Content)), maxEmbedChars))
	}
	vecs, err := e.client.Embed(ctx, e.embeddingModel, inputs)
	if err != nil {
		return nil, prov, fmt.Errorf("llm: embeddings: %w", err)
	}
	type key struct{ doc, topic int64 }
	baseScore := make(map[key]float64, len(base))
	for _, b := range base {
		baseScore[key{b.DocumentID, b.TopicID}] = clamp01(b.Score)
	}
	out := make([]assistant.RankedDocument, len(docs))
	for i, d := range docs {
		sim, err := similarity(vecs[0], vecs[i+1])
		if err != nil {
			return nil, prov, fmt.Errorf("llm: embeddings: %w", err)
		}
		score := sim
		if base != nil {
			score = (sim + baseScore[key{d.DocumentID, d.TopicID}]) / 2
		}
		out[i] = assistant.RankedDocument{Document: d, Score: score}
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
	return out, prov, nil
}

// similarity is the cosine of a and b mapped from [-1, 1] to [0, 1]; a zero
// vector is similar to nothing.
func similarity(a, b []float64) (float64, error) {
	if len(a) != len(b) {
		return 0, fmt.Errorf("vectors of %d and %d dimensions", len(a), len(b))
	}
	var dot, na, nb float64
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return 0, nil
	}
	return clamp01((dot/(math.Sqrt(na)*math.Sqrt(nb)) + 1) / 2), nil
}

func clamp01(x float64) float64 {
	switch {
	case math.IsNaN(x) || x < 0:
		return 0
	case x > 1:
		return 1
	}
	return x
}

// orPlaceholder keeps an input non-empty: embedding servers reject "".
func orPlaceholder(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(empty)"
	}
	return s
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// languageName describes an ISO 639-1 code for the prompt; "" when the code
// is not a valid one (it is then not put into the prompt at all).
func languageName(code string) string {
	n, err := langcode.Normalize(code)
	if err != nil {
		return ""
	}
	if name := langcode.Name(n); name != "" {
		return name + " (" + n + ")"
	}
	return "the language with ISO 639 code " + n
}
