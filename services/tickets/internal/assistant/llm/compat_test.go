package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/ai/openai"
	"supportplatform.dev/ai/openai/openaifake"
	"supportplatform.dev/services/tickets/internal/assistant"
)

// modelAnswers answers each operation as a well-behaved model would,
// telling them apart by the response format's name (summaries ask for
// none).
func modelAnswers(r openaifake.Request) openaifake.Answer {
	name := ""
	if r.ResponseFormat != nil && r.ResponseFormat.JSONSchema != nil {
		name = r.ResponseFormat.JSONSchema.Name
	}
	switch name {
	case "topic_scores":
		return openaifake.Answer{Content: `{"topics":[{"topicID":11,"score":0.9}]}`}
	case "prepared_reply":
		return openaifake.Answer{Content: `{"reply":"Open Settings, then Security.","documentIDs":[101]}`}
	}
	return openaifake.Answer{Content: "The customer cannot log in; the agent sent the reset steps."}
}

func fakeEngine(f *openaifake.Server, cfg openai.Config, fb assistant.Engine) *Engine {
	cfg.BaseURL, cfg.Timeout = f.URL, 5*time.Second
	c := openai.New(cfg, openai.WithSleep(func(ctx context.Context, _ time.Duration) error { return ctx.Err() }))
	return New(Options{Client: c, Fallback: fb})
}

// OpenAI's reasoning models (o-series, gpt-5) refuse max_tokens and
// temperature 0; every operation must still be theirs, not the fallback's,
// and the strict schemas must be ones OpenAI accepts.
func TestReasoningModelsServeEveryOperation(t *testing.T) {
	for _, model := range []string{"o4-mini", "gpt-5-mini", "gpt-4o-mini"} {
		t.Run(model, func(t *testing.T) {
			f := openaifake.New(t, openaifake.Options{Kind: openaifake.OpenAI, APIKey: testKey}).Handle(modelAnswers)
			fb := newFallback()
			e := fakeEngine(f, openai.Config{APIKey: testKey, Model: model, Server: openai.ServerOpenAI}, fb)
			ctx := context.Background()
			own := assistant.Provenance{Engine: EngineName, Model: model}

			scores, prov, err := e.DetectTopics(ctx, "I forgot my password", testTopics)
			if err != nil || prov != own || scores[0] != (assistant.TopicScore{TopicID: 11, Score: 0.9}) {
				t.Fatalf("DetectTopics = %v, %+v, %v", scores, prov, err)
			}
			reply, prov, err := e.PrepareReply(ctx, replyRequest)
			if err != nil || prov != own || reply.Text != "Open Settings, then Security." {
				t.Fatalf("PrepareReply = %+v, %+v, %v", reply, prov, err)
			}
			summary, prov, err := e.Summarize(ctx, "Login", "Open", []assistant.Turn{{SenderType: "EndUser", Text: "I cannot log in"}})
			if err != nil || prov != own || !strings.HasPrefix(summary, "The customer") {
				t.Fatalf("Summarize = %q, %+v, %v", summary, prov, err)
			}
			if f.Failures() != 0 || len(fb.calls) != 0 {
				t.Fatalf("the server refused %d request(s); fallback calls %v", f.Failures(), fb.calls)
			}
			for _, r := range f.Requests() {
				if r.ResponseFormat != nil && (r.ResponseFormat.Type != "json_schema" || !r.ResponseFormat.JSONSchema.Strict) {
					t.Errorf("response_format %+v, want a strict json_schema", r.ResponseFormat)
				}
			}
		})
	}
}

// A summary cut at the token limit, or a refused reply, is not the
// engine's answer: the fallback does the work.
func TestTruncatedOrRefusedAnswersFallBack(t *testing.T) {
	f := openaifake.New(t, openaifake.Options{Kind: openaifake.VLLM}).Reply(
		openaifake.Answer{Content: strings.Repeat("The customer wrote again and again. ", 200)},
		openaifake.Answer{Refusal: "I can't help with that."})
	fb := newFallback()
	e := fakeEngine(f, openai.Config{Model: "m", Server: openai.ServerVLLM}, fb)
	summary, prov, err := e.Summarize(context.Background(), "s", "Open", []assistant.Turn{{SenderType: "EndUser", Text: "x"}})
	if err != nil || summary != fallbackSummary || prov != offline {
		t.Fatalf("Summarize = %q, %+v, %v; want the fallback's", summary, prov, err)
	}
	reply, prov, err := e.PrepareReply(context.Background(), replyRequest)
	if err != nil || reply.Text != fallbackReply || prov != offline {
		t.Fatalf("PrepareReply = %+v, %+v, %v; want the fallback's", reply, prov, err)
	}
	if n := len(f.Requests()); n != 2 {
		t.Fatalf("%d requests, want 2 (neither asked again)", n)
	}
}

// Prompts are trimmed into the context the server runs with: Ollama drops
// the front of a longer prompt (the system message first) without saying
// so, which the fake does too.
func TestPromptsFitTheContext(t *testing.T) {
	const ctxTokens = 4096 // Ollama's default
	long := func(label string, n int) string {
		return strings.Repeat(label+" words that fill the context. ", n/32+1)[:n]
	}
	var history []assistant.Turn
	for i := range 12 {
		history = append(history, assistant.Turn{SenderType: "EndUser", Text: fmt.Sprintf("turn %d: %s", i, long("history", 3000))})
	}
	r := replyRequest
	r.History = history
	r.Message = long("message", 9000)
	r.Documents = []assistant.RankedDocument{
		{Document: assistant.Document{DocumentID: 101, Title: "Best", Content: long("best", 7000)}},
		{Document: assistant.Document{DocumentID: 102, Title: "Second", Content: long("second", 7000)}},
		{Document: assistant.Document{DocumentID: 103, Title: "Third", Content: long("third", 7000)}},
	}
	var topics []assistant.Topic
	for i := range 40 {
		topics = append(topics, assistant.Topic{TopicID: int64(i + 1), Name: fmt.Sprintf("Topic %d", i+1), Description: long("description", 1000),
			Documents: []assistant.Document{{Title: long("title", 150)}, {Title: long("other", 150)}}})
	}

	f := openaifake.New(t, openaifake.Options{Kind: openaifake.Ollama, ContextTokens: ctxTokens}).Handle(func(req openaifake.Request) openaifake.Answer {
		switch {
		case strings.Contains(req.System(), "classify"):
			return openaifake.Answer{Content: `{"topics":[{"topicID":1,"score":0.8}]}`}
		case strings.Contains(req.System(), "draft replies"):
			return openaifake.Answer{Content: `{"reply":"Hello.","documentIDs":[101]}`}
		}
		return openaifake.Answer{Content: "A summary."}
	})
	fb := newFallback()
	e := fakeEngine(f, openai.Config{Model: "llama3.1", Server: openai.ServerOllama}, fb)
	ctx := context.Background()
	if _, prov, err := e.DetectTopics(ctx, r.Message, topics); err != nil || prov.Engine != EngineName {
		t.Fatalf("DetectTopics: %+v, %v", prov, err)
	}
	if _, prov, err := e.PrepareReply(ctx, r); err != nil || prov.Engine != EngineName {
		t.Fatalf("PrepareReply: %+v, %v", prov, err)
	}
	if _, prov, err := e.Summarize(ctx, "Subject", "Open", history); err != nil || prov.Engine != EngineName {
		t.Fatalf("Summarize: %+v, %v", prov, err)
	}
	reqs := f.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	wantSystems := []string{topicsSystem, replySystem("es"), summarySystem}
	for i, req := range reqs {
		if req.Truncated || req.System() != wantSystems[i] {
			t.Fatalf("request %d: truncated by the server %v, system message intact %v (%d prompt tokens of %d)",
				i, req.Truncated, req.System() == wantSystems[i], req.PromptTokens, ctxTokens)
		}
	}

	var topicsSent topicsData
	mustData(t, reqs[0].User(), &topicsSent)
	if len(topicsSent.Topics) != 40 || topicsSent.Topics[0].TopicID != 1 || topicsSent.Message == "" {
		t.Errorf("detection prompt lost topics or the message: %d topics", len(topicsSent.Topics))
	}
	var replySent replyData
	mustData(t, reqs[1].User(), &replySent)
	if len(replySent.Documents) == 0 || replySent.Documents[0].DocumentID != 101 || replySent.Message == "" {
		t.Errorf("reply prompt lost the best document or the message: %+v", replySent.Documents)
	}
	if n := len(replySent.History); n > 0 && !strings.HasPrefix(replySent.History[n-1].Text, "turn 11:") {
		t.Errorf("reply prompt kept history %q... instead of the latest", replySent.History[n-1].Text[:10])
	}
	var summarySent summaryData
	mustData(t, reqs[2].User(), &summarySent)
	if len(summarySent.Conversation) == 0 || !strings.HasPrefix(summarySent.Conversation[0].Text, "turn 0:") || summarySent.OmittedTurns == 0 {
		t.Errorf("summary prompt: %d turns, %d omitted", len(summarySent.Conversation), summarySent.OmittedTurns)
	}
}

func mustData(t *testing.T, user string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(userData(t, user)), v); err != nil {
		t.Fatalf("data block: %v", err)
	}
}
