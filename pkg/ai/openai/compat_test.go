package openai

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/ai/openai/openaifake"
)

func noSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

func fakeClient(f *openaifake.Server, cfg Config) *Client {
	cfg.BaseURL = f.URL
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	return New(cfg, WithSleep(noSleep), WithBackoff(time.Millisecond, time.Millisecond, time.Minute))
}

func intp(n int) *int { return &n }

// Each server kind and model family gets the parameters it honours, at the
// first request: the fake refuses what the real ones refuse (OpenAI's
// reasoning models: max_tokens and temperature 0), and the local servers
// read only max_tokens.
func TestParametersPerServerAndModel(t *testing.T) {
	zero := 0.0
	tests := []struct {
		name      string
		kind      string // the fake's
		cfg       Config
		wantMax   *int
		wantMCT   *int
		wantTemp  *float64
		wantField []string
	}{
		{name: "openai o3-mini", kind: openaifake.OpenAI, cfg: Config{Server: ServerOpenAI, Model: "o3-mini"},
			wantMCT: intp(100 + DefaultReasoningTokens)},
		{name: "openai o1", kind: openaifake.OpenAI, cfg: Config{Server: ServerOpenAI, Model: "o1"},
			wantMCT: intp(100 + DefaultReasoningTokens)},
		{name: "openai gpt-5-mini with a smaller reasoning allowance", kind: openaifake.OpenAI,
			cfg: Config{Server: ServerOpenAI, Model: "gpt-5-mini", ReasoningTokens: 1000}, wantMCT: intp(1100)},
		{name: "openai gpt-4o", kind: openaifake.OpenAI, cfg: Config{Server: ServerOpenAI, Model: "gpt-4o"},
			wantMCT: intp(100), wantTemp: &zero},
		{name: "gpt-5 behind a generic proxy is still a reasoning model", kind: openaifake.OpenAI,
			cfg: Config{Model: "openai/gpt-5"}, wantMCT: intp(100 + DefaultReasoningTokens)},
		{name: "vllm", kind: openaifake.VLLM, cfg: Config{Server: ServerVLLM, Model: "Qwen/Qwen2.5-7B-Instruct"},
			wantMCT: intp(100), wantTemp: &zero},
		{name: "llama.cpp reads max_tokens", kind: openaifake.LlamaCpp, cfg: Config{Server: ServerLlamaCpp, Model: "qwen2.5"},
			wantMax: intp(100), wantTemp: &zero},
		{name: "ollama reads max_tokens", kind: openaifake.Ollama, cfg: Config{Server: ServerOllama, Model: "llama3.1"},
			wantMax: intp(100), wantTemp: &zero},
		{name: "a reasoning model named by the setting", kind: openaifake.OpenAI,
			cfg:     Config{Server: ServerOpenAI, Model: "house-model", Reasoning: ReasoningYes},
			wantMCT: intp(100 + DefaultReasoningTokens)},
		{name: "the token parameter forced", kind: openaifake.VLLM,
			cfg: Config{Server: ServerVLLM, Model: "m", TokenParam: TokenParamMaxTokens}, wantMax: intp(100), wantTemp: &zero},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := openaifake.New(t, openaifake.Options{Kind: tt.kind, ReasoningModels: []string{"house-model"}}).
				Reply(openaifake.Answer{Content: "Hello"})
			got, err := fakeClient(f, tt.cfg).Complete(context.Background(), msgs, WithTemperature(0), WithMaxTokens(100))
			if err != nil || got != "Hello" {
				t.Fatalf("Complete = %q, %v", got, err)
			}
			if f.Failures() != 0 {
				t.Fatalf("the server refused %d request(s) before the right one", f.Failures())
			}
			req := f.Requests()[0]
			if !equalPtr(req.MaxTokens, tt.wantMax) || !equalPtr(req.MaxCompletionTokens, tt.wantMCT) || !equalPtr(req.Temperature, tt.wantTemp) {
				t.Fatalf("sent max_tokens %v max_completion_tokens %v temperature %v; want %v %v %v",
					deref(req.MaxTokens), deref(req.MaxCompletionTokens), deref(req.Temperature),
					deref(tt.wantMax), deref(tt.wantMCT), deref(tt.wantTemp))
			}
		})
	}
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// A model the settings did not foresee refuses a parameter once: the
// client sends the request again without it and does not send it again.
func TestRefusedParameterIsLearned(t *testing.T) {
	f := openaifake.New(t, openaifake.Options{ReasoningModels: []string{"house-model"}}).
		Reply(openaifake.Answer{Content: "one"}, openaifake.Answer{Content: "two"})
	c := fakeClient(f, Config{Model: "house-model", MaxRetries: 0})
	for _, want := range []string{"one", "two"} {
		got, err := c.Complete(context.Background(), msgs, WithTemperature(0), WithMaxTokens(50))
		if err != nil || got != want {
			t.Fatalf("Complete = %q, %v; want %q", got, err, want)
		}
	}
	// The first call met max_tokens' refusal, then temperature's; the second none.
	if f.Failures() != 2 {
		t.Fatalf("the server refused %d requests, want 2 (max_tokens, then temperature, once)", f.Failures())
	}
	for i, req := range f.Requests() {
		if req.MaxTokens != nil || req.Temperature != nil || req.MaxCompletionTokens == nil || *req.MaxCompletionTokens != 50 {
			t.Fatalf("accepted request %d has fields %v", i, req.Fields)
		}
	}
}

var answerSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"answer": map[string]any{"type": "string"},
	},
	"required":             []any{"answer"},
	"additionalProperties": false,
}

func TestJSONResponseFormat(t *testing.T) {
	tests := []struct {
		name     string
		kind     string
		cfg      Config
		wantType string
	}{
		{"openai gets a strict json_schema", openaifake.OpenAI, Config{Server: ServerOpenAI, Model: "gpt-4o-mini"}, "json_schema"},
		{"llama.cpp gets json_schema", openaifake.LlamaCpp, Config{Server: ServerLlamaCpp, Model: "m"}, "json_schema"},
		{"a generic server gets json_object", openaifake.VLLM, Config{Model: "m"}, "json_object"},
		{"json_object by setting", openaifake.OpenAI, Config{Server: ServerOpenAI, Model: "gpt-4o", ResponseFormat: FormatJSONObject}, "json_object"},
		{"none by setting", openaifake.OpenAI, Config{Server: ServerOpenAI, Model: "gpt-4o", ResponseFormat: FormatNone}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := openaifake.New(t, openaifake.Options{Kind: tt.kind}).Reply(openaifake.Answer{Content: `{"answer":"yes"}`})
			jsonMsgs := []Message{{Role: "system", Content: "Answer in JSON."}, {Role: "user", Content: "Well?"}}
			if _, err := fakeClient(f, tt.cfg).Complete(context.Background(), jsonMsgs, WithJSON("answer", answerSchema)); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			rf := f.Requests()[0].ResponseFormat
			switch {
			case tt.wantType == "" && rf != nil:
				t.Fatalf("response_format %+v sent, want none", rf)
			case tt.wantType == "":
			case rf == nil || rf.Type != tt.wantType:
				t.Fatalf("response_format %+v, want type %s", rf, tt.wantType)
			case tt.wantType == "json_schema" && (rf.JSONSchema == nil || !rf.JSONSchema.Strict || rf.JSONSchema.Name != "answer" || rf.JSONSchema.Schema["type"] != "object"):
				t.Fatalf("json_schema %+v, want the strict schema named answer", rf.JSONSchema)
			}
		})
	}
}

// A server without structured outputs refuses response_format: the client
// steps down to json_object, then to none, and remembers.
func TestRefusedResponseFormatIsDowngraded(t *testing.T) {
	f := openaifake.New(t, openaifake.Options{Kind: openaifake.OpenAI}).Reply(
		openaifake.Answer{Status: 400, Body: `{"error":{"message":"response_format json_schema is not supported","type":"invalid_request_error","param":"response_format","code":null}}`},
		openaifake.Answer{Content: `{"answer":"a"}`},
		openaifake.Answer{Content: `{"answer":"b"}`})
	c := fakeClient(f, Config{Server: ServerOpenAI, Model: "gpt-4o"})
	jsonMsgs := []Message{{Role: "user", Content: "Answer in JSON."}}
	for range 2 {
		if _, err := c.Complete(context.Background(), jsonMsgs, WithJSON("answer", answerSchema)); err != nil {
			t.Fatalf("Complete: %v", err)
		}
	}
	reqs := f.Requests()
	if len(reqs) != 3 || reqs[1].ResponseFormat == nil || reqs[1].ResponseFormat.Type != "json_object" || reqs[2].ResponseFormat.Type != "json_object" {
		t.Fatalf("requests' formats: %v", formatsOf(reqs))
	}
}

func formatsOf(reqs []openaifake.Request) []string {
	var out []string
	for _, r := range reqs {
		if r.ResponseFormat == nil {
			out = append(out, "")
			continue
		}
		out = append(out, r.ResponseFormat.Type)
	}
	return out
}

func TestJSONText(t *testing.T) {
	const obj = `{"topics":[{"topicID":1,"score":0.5}]}`
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{"plain", obj, obj, true},
		{"fenced", "```json\n" + obj + "\n```", obj, true},
		{"fenced without language", "```\n" + obj + "\n```", obj, true},
		{"think block", "<think>They want topics.</think>\n" + obj, obj, true},
		{"closing think tag only", "The user asks about topics, so I answer.\n</think>\n\n" + obj, obj, true},
		{"think then fence", "reasoning</think>```json\n" + obj + "\n```", obj, true},
		{"text around", "Here is the result: " + obj + "\nHope this helps!", obj, true},
		{"a brace in the text before", "Scores {as asked}: " + obj, obj, true},
		{"unclosed think is all reasoning", "<think>I wonder " + obj, "", false},
		{"no JSON", "Sure! This is about passwords.", "", false},
		{"an array is not an object", `[1,2]`, "", false},
		{"cut off", `{"topics":[{"topicID":1,`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := JSONText(tt.in)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("JSONText = %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestStripReasoning(t *testing.T) {
	for in, want := range map[string]string{
		"<think>x</think>\nHola":          "Hola",
		"I should translate.</think>Hola": "Hola",
		"Hola":                            "Hola",
		"<think>never closed":             "",
		"a <think>b</think> c":            "a <think>b</think> c",
	} {
		if got := StripReasoning(in); got != want {
			t.Errorf("StripReasoning(%q) = %q, want %q", in, got, want)
		}
	}
}

// Refusals and answers cut at the token limit are failures, never text.
func TestRefusalAndTruncation(t *testing.T) {
	t.Run("refusal", func(t *testing.T) {
		f := openaifake.New(t, openaifake.Options{}).Reply(openaifake.Answer{Refusal: "I can't help with that."})
		_, err := fakeClient(f, Config{Server: ServerOpenAI, Model: "gpt-4o", MaxRetries: 2}).Complete(context.Background(), msgs)
		var ref *RefusalError
		if !errors.As(err, &ref) || ref.Refusal != "I can't help with that." {
			t.Fatalf("error = %v, want the refusal", err)
		}
		if len(f.Requests()) != 1 {
			t.Fatalf("%d requests, want 1", len(f.Requests()))
		}
	})
	t.Run("finish_reason length", func(t *testing.T) {
		f := openaifake.New(t, openaifake.Options{Kind: openaifake.LlamaCpp}).
			Reply(openaifake.Answer{Content: strings.Repeat("A long summary that goes on. ", 40)})
		got, err := fakeClient(f, Config{Server: ServerLlamaCpp, Model: "m", MaxRetries: 2}).
			Complete(context.Background(), msgs, WithMaxTokens(20))
		if !errors.Is(err, ErrTruncated) || got != "" {
			t.Fatalf("Complete = %q, %v; want ErrTruncated", got, err)
		}
		if len(f.Requests()) != 1 {
			t.Fatalf("%d requests, want 1", len(f.Requests()))
		}
	})
}

// Errors no retry cures are not retried: a prompt over the context
// (llama.cpp answers it with a 500, vLLM and OpenAI with a 400) and an
// exhausted quota (429 insufficient_quota).
func TestPermanentErrorsAreNotRetried(t *testing.T) {
	long := []Message{{Role: "system", Content: "Summarise."}, {Role: "user", Content: strings.Repeat("word ", 400)}}
	tests := []struct {
		name string
		kind string
		ctx  int
		prep func(*openaifake.Server)
		want error
	}{
		{"llama.cpp context 500", openaifake.LlamaCpp, 100, nil, ErrContextExceeded},
		{"vLLM context 400", openaifake.VLLM, 100, nil, ErrContextExceeded},
		{"OpenAI context 400", openaifake.OpenAI, 100, nil, ErrContextExceeded},
		{"insufficient_quota 429", openaifake.OpenAI, 0, (*openaifake.Server).ExhaustQuota, ErrQuota},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := openaifake.New(t, openaifake.Options{Kind: tt.kind, ContextTokens: tt.ctx})
			if tt.prep != nil {
				tt.prep(f)
			}
			// The client believes in a large context: the server's answer is what tells.
			c := fakeClient(f, Config{Server: tt.kind, Model: "m", MaxRetries: 3, ContextTokens: 100000})
			_, err := c.Complete(context.Background(), long, WithMaxTokens(10))
			if !errors.Is(err, tt.want) {
				t.Fatalf("error = %v, want %v", err, tt.want)
			}
			var ue *UpstreamError
			if !errors.As(err, &ue) || ue.Attempts != 1 || f.Failures() != 1 {
				t.Fatalf("error %v after %d failed request(s), want one attempt", err, f.Failures())
			}
		})
	}
}

// A prompt over AI_CONTEXT_TOKENS is not sent: Ollama would silently drop
// its front (the system message with it) and answer something.
func TestPromptOverContextIsNotSent(t *testing.T) {
	f := openaifake.New(t, openaifake.Options{Kind: openaifake.Ollama, ContextTokens: 200}).Handle(func(r openaifake.Request) openaifake.Answer {
		return openaifake.Answer{Content: "answered without the instructions"}
	})
	long := []Message{{Role: "system", Content: "Translate into French."}, {Role: "user", Content: strings.Repeat("word ", 200)}}

	// Without the right context length the fake shows what Ollama does.
	if _, err := fakeClient(f, Config{Server: ServerOllama, Model: "m", ContextTokens: 100000}).Complete(context.Background(), long); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if r := f.Requests()[0]; !r.Truncated || r.System() != "" {
		t.Fatalf("the fake did not drop the front of the prompt: %+v", r)
	}

	c := fakeClient(f, Config{Server: ServerOllama, Model: "m", ContextTokens: 200})
	_, err := c.Complete(context.Background(), long, WithMaxTokens(10))
	var ce *ContextError
	if !errors.As(err, &ce) || !errors.Is(err, ErrContextExceeded) || ce.ContextTokens != 200 {
		t.Fatalf("error = %v, want a ContextError for 200 tokens", err)
	}
	if len(f.Requests()) != 1 {
		t.Fatalf("the overlong prompt was sent")
	}
	if b := c.PromptBudget(10); b <= 0 || b >= 200 {
		t.Fatalf("PromptBudget(10) = %d", b)
	}
	short := []Message{{Role: "system", Content: "Translate into French."}, {Role: "user", Content: "Hello"}}
	if _, err := c.Complete(context.Background(), short, WithMaxTokens(10)); err != nil {
		t.Fatalf("a short prompt: %v", err)
	}
}

func TestDefaultContextPerKind(t *testing.T) {
	for kind, want := range map[string]int{ServerOpenAI: 128000, ServerOllama: 4096, ServerLlamaCpp: 4096, ServerVLLM: 8192, "": 8192} {
		if got := New(Config{BaseURL: "http://10.0.0.1:8000/v1", Model: "m", Server: kind}).ContextTokens(); got != want {
			t.Errorf("kind %q: ContextTokens = %d, want %d", kind, got, want)
		}
	}
	if got := New(Config{BaseURL: "http://127.0.0.1:11434/v1", Model: "m"}).ContextTokens(); got != 4096 {
		t.Errorf("auto on port 11434: ContextTokens = %d, want Ollama's 4096", got)
	}
	if got := New(Config{BaseURL: "https://api.openai.com/v1", Model: "m"}).p.tokenParam; got != TokenParamMaxCompletionTokens {
		t.Errorf("auto on api.openai.com: token parameter %s", got)
	}
	for _, bad := range []Config{{Server: "tgi"}, {TokenParam: "n_predict"}, {Reasoning: "maybe"}, {ResponseFormat: "xml"}, {ContextTokens: -1}} {
		if bad.Check() == nil {
			t.Errorf("Check(%+v) = nil", bad)
		}
	}
}

// vLLM and llama.cpp serve embeddings from a process of their own:
// Embed goes to AI_EMBEDDING_URL with its key.
func TestEmbeddingsFromTheirOwnServer(t *testing.T) {
	chat := openaifake.New(t, openaifake.Options{Kind: openaifake.LlamaCpp, APIKey: "chat-key"})
	emb := openaifake.New(t, openaifake.Options{Kind: openaifake.LlamaCpp, APIKey: "embed-key", Embeddings: true})
	c := New(Config{BaseURL: chat.URL, APIKey: "chat-key", Model: "chat", Server: ServerLlamaCpp,
		EmbeddingURL: emb.URL + "/", EmbeddingKey: "embed-key"}, WithSleep(noSleep))
	vecs, err := c.Embed(context.Background(), "nomic-embed-text", []string{"password reset", "invoice"})
	if err != nil || len(vecs) != 2 || len(vecs[0]) != 26 {
		t.Fatalf("Embed = %v, %v", vecs, err)
	}
	if chat.Embeddings() != 0 || emb.Embeddings() != 1 {
		t.Fatalf("embedding requests: chat server %d, embedding server %d", chat.Embeddings(), emb.Embeddings())
	}
	// Without AI_EMBEDDING_URL they go to the chat server, which has none.
	_, err = New(Config{BaseURL: chat.URL, APIKey: "chat-key", Model: "chat"}, WithSleep(noSleep)).
		Embed(context.Background(), "nomic-embed-text", []string{"x"})
	var ue *UpstreamError
	if !errors.As(err, &ue) || ue.StatusCode != 501 || !slices.Contains([]int{1}, ue.Attempts) {
		t.Fatalf("error = %v, want llama.cpp's 501 once", err)
	}
}
