package llm

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"supportplatform.dev/ai/openai"
	"supportplatform.dev/services/tickets/internal/assistant"
)

const (
	testKey        = "sk-llm-test"
	chatModel      = "chat-model"
	embeddingModel = "embed-model"
)

// step is one scripted answer of the fake server: an HTTP error status, a
// request held until the client gives up, a raw body, or (the default) a
// chat completion whose content is content, or embeddings computed by vectors.
type step struct {
	status  int
	header  map[string]string
	block   bool
	body    string
	content string
	vectors func(inputs []string) [][]float64
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Temperature         *float64        `json:"temperature"`
	MaxTokens           int             `json:"max_tokens"`
	MaxCompletionTokens int             `json:"max_completion_tokens"`
	ResponseFormat      json.RawMessage `json:"response_format"`
	Stream              bool            `json:"stream"`
}

type embedRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

// fakeServer speaks the OpenAI API (POST /v1/chat/completions and
// POST /v1/embeddings), checks requests as a real server would, answers
// each endpoint from its own script and records what it received.
type fakeServer struct {
	t   *testing.T
	srv *httptest.Server

	mu         sync.Mutex
	chatSteps  []step
	embedSteps []step
	chats      []chatRequest
	embeds     []embedRequest
}

func newFakeServer(t *testing.T) *fakeServer {
	f := &fakeServer{t: t}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// chat appends answers for chat completions; embed for embeddings.
func (f *fakeServer) chat(steps ...step) *fakeServer {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.chatSteps = append(f.chatSteps, steps...)
	return f
}

func (f *fakeServer) embed(steps ...step) *fakeServer {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.embedSteps = append(f.embedSteps, steps...)
	return f
}

func (f *fakeServer) chatRequests() []chatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]chatRequest(nil), f.chats...)
}

func (f *fakeServer) embedRequests() []embedRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]embedRequest(nil), f.embeds...)
}

func apiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error"}})
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		apiError(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+testKey {
		apiError(w, http.StatusUnauthorized, "Incorrect API key provided")
		return
	}
	if r.Header.Get("Content-Type") != "application/json" {
		apiError(w, http.StatusUnsupportedMediaType, "bad content type")
		return
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	var (
		s      step
		inputs []string
	)
	switch r.URL.Path {
	case "/v1/chat/completions":
		var req chatRequest
		if err := dec.Decode(&req); err != nil || req.Model != chatModel || len(req.Messages) == 0 || req.Stream {
			apiError(w, http.StatusBadRequest, "bad chat request")
			return
		}
		for _, m := range req.Messages {
			if m.Role != "system" && m.Role != "user" && m.Role != "assistant" {
				apiError(w, http.StatusBadRequest, "bad role "+m.Role)
				return
			}
		}
		f.mu.Lock()
		f.chats = append(f.chats, req)
		if len(f.chatSteps) == 0 {
			f.mu.Unlock()
			f.t.Errorf("unexpected chat completion request %d", len(f.chats))
			apiError(w, http.StatusInternalServerError, "no more steps")
			return
		}
		s, f.chatSteps = f.chatSteps[0], f.chatSteps[1:]
		f.mu.Unlock()
	case "/v1/embeddings":
		var req embedRequest
		if err := dec.Decode(&req); err != nil || req.Model != embeddingModel || len(req.Input) == 0 {
			apiError(w, http.StatusBadRequest, "bad embeddings request")
			return
		}
		for _, in := range req.Input {
			if in == "" {
				apiError(w, http.StatusBadRequest, "input must not be empty")
				return
			}
		}
		inputs = req.Input
		f.mu.Lock()
		f.embeds = append(f.embeds, req)
		if len(f.embedSteps) == 0 {
			f.mu.Unlock()
			f.t.Errorf("unexpected embeddings request %d", len(f.embeds))
			apiError(w, http.StatusInternalServerError, "no more steps")
			return
		}
		s, f.embedSteps = f.embedSteps[0], f.embedSteps[1:]
		f.mu.Unlock()
	default:
		apiError(w, http.StatusNotFound, "unknown path")
		return
	}

	if s.block {
		<-r.Context().Done()
		return
	}
	for k, v := range s.header {
		w.Header().Set(k, v)
	}
	if s.status != 0 && s.status != http.StatusOK {
		apiError(w, s.status, "scripted failure")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if s.body != "" {
		_, _ = w.Write([]byte(s.body))
		return
	}
	var reply any
	if inputs != nil {
		data := make([]any, 0, len(inputs))
		for i, v := range s.vectors(inputs) {
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": v})
		}
		reply = map[string]any{"object": "list", "data": data, "model": embeddingModel,
			"usage": map[string]int{"prompt_tokens": 10, "total_tokens": 10}}
	} else {
		reply = map[string]any{
			"id": "chatcmpl-test", "object": "chat.completion", "created": 1700000000, "model": chatModel,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": s.content}}},
			"usage": map[string]int{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
		}
	}
	_ = json.NewEncoder(w).Encode(reply)
}

// answer is a chat step answering content.
func answer(content string) step { return step{content: content} }

// waits records the client's waits between retries instead of sleeping.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.d = append(w.d, d)
	w.mu.Unlock()
	return ctx.Err()
}

func (w *waits) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.d...)
}

// clientConfig is a test's client: two retries, a 5 s attempt timeout.
func clientConfig(f *fakeServer) openai.Config {
	return openai.Config{BaseURL: f.srv.URL + "/v1", APIKey: testKey, Model: chatModel, MaxRetries: 2, Timeout: 5 * time.Second}
}

func newClient(cfg openai.Config, w *waits) *openai.Client {
	return openai.New(cfg, openai.WithSleep(w.sleep), openai.WithBackoff(time.Millisecond, 10*time.Millisecond, time.Minute))
}

var offline = assistant.Provenance{Engine: "offline", Model: "bm25-v1"}

// fallbackEngine is a hand-written assistant.Engine standing in for the
// offline engine: deterministic answers that no LLM path produces, and a
// count of its calls.
type fallbackEngine struct {
	mu    sync.Mutex
	calls map[string]int
	// rank gives RankDocuments' score per DocumentID (0 when absent).
	rank map[int64]float64
}

func newFallback() *fallbackEngine { return &fallbackEngine{calls: map[string]int{}} }

func (fb *fallbackEngine) called(op string) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	fb.calls[op]++
}

func (fb *fallbackEngine) count(op string) int {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	return fb.calls[op]
}

// fallbackScore is the fallback's score of every topic.
const fallbackScore = 0.123

func (fb *fallbackEngine) DetectTopics(_ context.Context, _ string, topics []assistant.Topic) ([]assistant.TopicScore, assistant.Provenance, error) {
	fb.called("DetectTopics")
	out := make([]assistant.TopicScore, len(topics))
	for i, t := range topics {
		out[i] = assistant.TopicScore{TopicID: t.TopicID, Score: fallbackScore}
	}
	return out, offline, nil
}

func (fb *fallbackEngine) RankDocuments(_ context.Context, _ string, docs []assistant.Document) ([]assistant.RankedDocument, assistant.Provenance, error) {
	fb.called("RankDocuments")
	out := make([]assistant.RankedDocument, len(docs))
	for i, d := range docs {
		out[i] = assistant.RankedDocument{Document: d, Score: fb.rank[d.DocumentID]}
	}
	// Best first, as the contract says.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Score > out[j-1].Score; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out, offline, nil
}

const fallbackReply = "offline reply from the best passage"

func (fb *fallbackEngine) PrepareReply(_ context.Context, r assistant.ReplyRequest) (assistant.Reply, assistant.Provenance, error) {
	fb.called("PrepareReply")
	if len(r.Documents) == 0 {
		return assistant.Reply{}, offline, nil
	}
	return assistant.Reply{Text: fallbackReply, Language: r.Language, DocumentIDs: []int64{r.Documents[0].DocumentID}}, offline, nil
}

const fallbackSummary = "offline extractive summary"

func (fb *fallbackEngine) Summarize(context.Context, string, string, []assistant.Turn) (string, assistant.Provenance, error) {
	fb.called("Summarize")
	return fallbackSummary, offline, nil
}

// userData returns the JSON between the data markers of a user message,
// failing the test unless the message has exactly one well-formed block.
func userData(t *testing.T, content string) string {
	t.Helper()
	if n := strings.Count(content, dataOpen); n != 1 {
		t.Fatalf("user message has %d %q markers, want 1:\n%s", n, dataOpen, content)
	}
	if n := strings.Count(content, dataClose); n != 1 {
		t.Fatalf("user message has %d %q markers, want 1:\n%s", n, dataClose, content)
	}
	start := strings.Index(content, dataOpen+"\n")
	end := strings.LastIndex(content, "\n"+dataClose)
	if start < 0 || end < start || !strings.HasSuffix(content, dataClose) {
		t.Fatalf("user message does not end with one data block:\n%s", content)
	}
	return content[start+len(dataOpen)+1 : end]
}
