// Package openaifake is an OpenAI-compatible server for tests that behaves
// like the real ones where they differ: OpenAI's reasoning models refuse
// max_tokens and a temperature other than 1, OpenAI refuses unknown request
// fields, json_object without the word JSON in the messages and a strict
// json_schema that is not strict-compatible, and answers 429
// insufficient_quota when the account is empty; llama.cpp answers an
// overlong prompt with a 500 exceed_context_size_error and serves no
// embeddings unless started for them; vLLM answers it with a 400; Ollama
// silently drops the front of the prompt; the local servers ignore the
// output bound they do not read. Answers are scripted (Reply) or computed
// (Handle) and come back in the shapes real models produce; an answer longer
// than the output bound is cut with finish_reason "length".
package openaifake

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Server kinds the fake imitates.
const (
	OpenAI   = "openai"
	VLLM     = "vllm"
	LlamaCpp = "llamacpp"
	Ollama   = "ollama"
)

// Options configure a Server.
type Options struct {
	// Kind is the server imitated; default OpenAI.
	Kind string
	// APIKey, when set, is required as the Bearer token.
	APIKey string
	// ContextTokens is the context the model runs with (llama.cpp's -c,
	// OLLAMA_CONTEXT_LENGTH, vLLM's --max-model-len); 0 = unlimited.
	ContextTokens int
	// ReasoningModels are model names treated like OpenAI's reasoning
	// families besides the ones the fake knows (o1, o3, o4, gpt-5).
	ReasoningModels []string
	// Embeddings makes the server answer /v1/embeddings (llama.cpp and vLLM
	// serve them from a process started for it).
	Embeddings bool
}

// Message is a chat message as received.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ResponseFormat is the response_format of a request.
type ResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string         `json:"name"`
		Strict bool           `json:"strict"`
		Schema map[string]any `json:"schema"`
	} `json:"json_schema"`
}

// Request is a chat-completions request the server accepted.
type Request struct {
	Model               string          `json:"model"`
	Messages            []Message       `json:"messages"`
	Temperature         *float64        `json:"temperature"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	ResponseFormat      *ResponseFormat `json:"response_format"`
	Stream              bool            `json:"stream"`
	// Fields are the names of every field sent.
	Fields []string `json:"-"`
	// Auth is the Authorization header.
	Auth string `json:"-"`
	// PromptTokens is the prompt's size as the fake counts it (about four
	// characters a token).
	PromptTokens int `json:"-"`
	// Truncated says Ollama dropped the front of the prompt to fit its
	// context; Messages then hold what the model saw.
	Truncated bool `json:"-"`
}

// System is the content of the request's system message, "" when the
// model saw none.
func (r Request) System() string {
	for _, m := range r.Messages {
		if m.Role == "system" {
			return m.Content
		}
	}
	return ""
}

// User is the content of the last user message.
func (r Request) User() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// Answer is what the model says, or a scripted failure.
type Answer struct {
	Content string
	// Refusal makes the message a refusal (content null).
	Refusal string
	// FinishReason is "stop" unless set (or the answer exceeds the output
	// bound, which makes it "length").
	FinishReason string
	// Status, with Body, answers an HTTP error instead.
	Status int
	Body   string
	Header map[string]string
}

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	// URL is the API base, ending in /v1.
	URL string

	t    testing.TB
	o    Options
	srv  *httptest.Server
	mu   sync.Mutex
	fn   func(Request) Answer
	q    []Answer
	reqs []Request
	// embeds counts embedding requests.
	embeds     int
	embedFn    func([]string) [][]float64
	quotaEmpty bool
	failures   int
}

// New starts a fake, closed when the test ends.
func New(t testing.TB, o Options) *Server {
	if o.Kind == "" {
		o.Kind = OpenAI
	}
	s := &Server{t: t, o: o}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	s.URL = s.srv.URL + "/v1"
	return s
}

// Reply queues answers, given one per chat request in order.
func (s *Server) Reply(a ...Answer) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.q = append(s.q, a...)
	return s
}

// Handle computes the answer of every chat request the queue does not
// answer.
func (s *Server) Handle(f func(Request) Answer) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fn = f
	return s
}

// EmbedWith sets how embeddings are computed (default: a vector from the
// letters of each input).
func (s *Server) EmbedWith(f func([]string) [][]float64) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.embedFn = f
	return s
}

// ExhaustQuota makes every later request a 429 insufficient_quota, as
// OpenAI answers an account without credit.
func (s *Server) ExhaustQuota() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quotaEmpty = true
}

// Requests are the chat requests the server accepted, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// Embeddings counts the embedding requests received.
func (s *Server) Embeddings() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.embeds
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Failures counts the requests answered with an error.
func (s *Server) Failures() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failures
}

// fail answers an error in OpenAI's shape (llama.cpp's code is the status).
func (s *Server) fail(w http.ResponseWriter, status int, typ, code, param, msg string) {
	s.mu.Lock()
	s.failures++
	s.mu.Unlock()
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	if param != "" {
		e["param"] = param
	}
	if s.o.Kind == LlamaCpp {
		e = map[string]any{"code": status, "message": msg, "type": typ}
	}
	writeJSON(w, status, map[string]any{"error": e})
}

// openAIFields are the request fields OpenAI knows (of those a client of
// this project might send); it refuses others.
var openAIFields = []string{"model", "messages", "temperature", "top_p", "n", "stop", "seed", "max_tokens",
	"max_completion_tokens", "response_format", "stream", "stream_options", "presence_penalty",
	"frequency_penalty", "logprobs", "user", "reasoning_effort", "tools", "tool_choice"}

var reasoningName = regexp.MustCompile(`^(o[134](-mini|-pro)?|gpt-5(\.\d+)?(-mini|-nano|-pro)?)(-\d{4}-\d{2}-\d{2})?$`)

func (s *Server) reasoning(model string) bool {
	return reasoningName.MatchString(model) || slices.Contains(s.o.ReasoningModels, model)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		s.fail(w, http.StatusMethodNotAllowed, "invalid_request_error", "", "", "method not allowed")
		return
	}
	if s.o.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.o.APIKey {
		s.fail(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "", "Incorrect API key provided.")
		return
	}
	s.mu.Lock()
	empty := s.quotaEmpty
	s.mu.Unlock()
	if empty {
		s.fail(w, http.StatusTooManyRequests, "insufficient_quota", "insufficient_quota", "",
			"You exceeded your current quota, please check your plan and billing details.")
		return
	}
	if r.Header.Get("Content-Type") != "application/json" {
		s.fail(w, http.StatusUnsupportedMediaType, "invalid_request_error", "", "", "Content-Type must be application/json")
		return
	}
	switch r.URL.Path {
	case "/v1/chat/completions":
		s.chat(w, r)
	case "/v1/embeddings":
		s.embeddings(w, r)
	default:
		s.fail(w, http.StatusNotFound, "invalid_request_error", "", "", "Invalid URL (POST "+r.URL.Path+")")
	}
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var fields map[string]json.RawMessage
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<20)).Decode(&fields); err != nil {
		s.fail(w, http.StatusBadRequest, "invalid_request_error", "", "", "We could not parse the JSON body of your request.")
		return
	}
	raw, _ := json.Marshal(fields)
	var req Request
	if err := json.Unmarshal(raw, &req); err != nil || req.Model == "" || len(req.Messages) == 0 {
		s.fail(w, http.StatusBadRequest, "invalid_request_error", "", "", fmt.Sprintf("invalid request: %v", err))
		return
	}
	for k := range fields {
		req.Fields = append(req.Fields, k)
	}
	slices.Sort(req.Fields)
	req.Auth = r.Header.Get("Authorization")
	if req.Stream {
		s.fail(w, http.StatusBadRequest, "invalid_request_error", "", "stream", "the fake does not stream")
		return
	}

	if s.o.Kind == OpenAI {
		for _, f := range req.Fields {
			if !slices.Contains(openAIFields, f) {
				s.fail(w, http.StatusBadRequest, "invalid_request_error", "", "", "Unrecognized request argument supplied: "+f)
				return
			}
		}
		if s.reasoning(req.Model) {
			if req.MaxTokens != nil {
				s.fail(w, http.StatusBadRequest, "invalid_request_error", "unsupported_parameter", "max_tokens",
					"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.")
				return
			}
			if req.Temperature != nil && *req.Temperature != 1 {
				s.fail(w, http.StatusBadRequest, "invalid_request_error", "unsupported_value", "temperature",
					fmt.Sprintf("Unsupported value: 'temperature' does not support %v with this model. Only the default (1) value is supported.", *req.Temperature))
				return
			}
		}
		if msg, param := checkFormat(req); msg != "" {
			s.fail(w, http.StatusBadRequest, "invalid_request_error", "", param, msg)
			return
		}
	}

	// The output bound each server reads.
	limit := 0
	switch {
	case (s.o.Kind == OpenAI || s.o.Kind == VLLM) && req.MaxCompletionTokens != nil:
		limit = *req.MaxCompletionTokens
	case req.MaxTokens != nil:
		limit = *req.MaxTokens
	}

	req.PromptTokens = promptTokens(req.Messages)
	if ctx := s.o.ContextTokens; ctx > 0 {
		switch s.o.Kind {
		case OpenAI:
			if req.PromptTokens+limit > ctx {
				s.fail(w, http.StatusBadRequest, "invalid_request_error", "context_length_exceeded", "messages",
					fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", ctx, req.PromptTokens+limit))
				return
			}
		case VLLM:
			if req.PromptTokens+limit > ctx {
				s.fail(w, http.StatusBadRequest, "BadRequestError", "", "",
					fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.", ctx, req.PromptTokens+limit, req.PromptTokens, limit))
				return
			}
		case LlamaCpp:
			if req.PromptTokens > ctx {
				s.fail(w, http.StatusInternalServerError, "exceed_context_size_error", "", "",
					"the request exceeds the available context size. try increasing the context size or enable context shift")
				return
			}
		case Ollama:
			// Ollama keeps the end of an overlong prompt and answers as if
			// nothing happened: the system message at the front goes first.
			for req.PromptTokens > ctx && len(req.Messages) > 1 {
				req.Messages = slices.Clone(req.Messages[1:])
				req.Truncated = true
				req.PromptTokens = promptTokens(req.Messages)
			}
			if over := req.PromptTokens - ctx; over > 0 {
				last := []rune(req.Messages[0].Content)
				req.Messages[0].Content = string(last[min(len(last), over*4):])
				req.Truncated = true
				req.PromptTokens = promptTokens(req.Messages)
			}
		}
	}

	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	var a Answer
	switch {
	case len(s.q) > 0:
		a, s.q = s.q[0], s.q[1:]
	case s.fn != nil:
		fn := s.fn
		s.mu.Unlock()
		a = fn(req)
		s.mu.Lock()
	default:
		s.mu.Unlock()
		s.t.Errorf("openaifake: unexpected chat request %d", len(s.Requests()))
		s.fail(w, http.StatusInternalServerError, "server_error", "", "", "no answer scripted")
		return
	}
	s.mu.Unlock()

	for k, v := range a.Header {
		w.Header().Set(k, v)
	}
	if a.Status != 0 && a.Status != http.StatusOK {
		if a.Body != "" {
			s.mu.Lock()
			s.failures++
			s.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(a.Status)
			_, _ = w.Write([]byte(a.Body))
			return
		}
		s.fail(w, a.Status, "server_error", "", "", "scripted failure")
		return
	}
	finish := a.FinishReason
	if finish == "" {
		finish = "stop"
	}
	content := any(a.Content)
	if limit > 0 && tokens(a.Content) > limit {
		content, finish = cut(a.Content, limit), "length"
	}
	msg := map[string]any{"role": "assistant", "content": content, "refusal": nil}
	if a.Refusal != "" {
		msg["content"], msg["refusal"] = nil, a.Refusal
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": 1700000000, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage": map[string]int{"prompt_tokens": req.PromptTokens, "completion_tokens": tokens(a.Content),
			"total_tokens": req.PromptTokens + tokens(a.Content)},
	})
}

var schemaName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// checkFormat refuses what OpenAI refuses in response_format.
func checkFormat(req Request) (msg, param string) {
	f := req.ResponseFormat
	if f == nil {
		return "", ""
	}
	switch f.Type {
	case "text":
	case "json_object":
		for _, m := range req.Messages {
			if strings.Contains(strings.ToLower(m.Content), "json") {
				return "", ""
			}
		}
		return "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.", "messages"
	case "json_schema":
		if f.JSONSchema == nil || !schemaName.MatchString(f.JSONSchema.Name) {
			return "Missing required parameter: 'response_format.json_schema.name'.", "response_format.json_schema.name"
		}
		if f.JSONSchema.Strict {
			if err := strictSchema(f.JSONSchema.Schema, "()"); err != "" {
				return fmt.Sprintf("Invalid schema for response_format '%s': %s", f.JSONSchema.Name, err), "response_format"
			}
		}
	default:
		return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'json_object', 'json_schema', and 'text'.", f.Type), "response_format.type"
	}
	return "", ""
}

// strictSchema checks what strict structured outputs demand of every
// object: additionalProperties false and every property required.
func strictSchema(s map[string]any, where string) string {
	if s == nil {
		return "In context=" + where + ", schema must be a JSON Schema of 'type: \"object\"'"
	}
	if hasType(s, "object") {
		if ap, ok := s["additionalProperties"].(bool); !ok || ap {
			return "In context=" + where + ", 'additionalProperties' is required to be supplied and to be false."
		}
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		for name, p := range props {
			if !slices.Contains(req, any(name)) {
				return fmt.Sprintf("In context=%s, 'required' is required to be supplied and to be an array including every key in properties. Missing '%s'.", where, name)
			}
			sub, _ := p.(map[string]any)
			if err := strictSchema(sub, where+", '"+name+"'"); err != "" {
				return err
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		return strictSchema(items, where+", 'items'")
	}
	return ""
}

func hasType(s map[string]any, t string) bool {
	switch v := s["type"].(type) {
	case string:
		return v == t
	case []any:
		return slices.Contains(v, any(t))
	}
	return false
}

// tokens is the fake's token count: about four characters a token, as
// BPE vocabularies average on English.
func tokens(s string) int { return (len([]rune(s)) + 3) / 4 }

func promptTokens(msgs []Message) int {
	n := 3
	for _, m := range msgs {
		n += 4 + tokens(m.Content)
	}
	return n
}

func cut(s string, limit int) string {
	r := []rune(s)
	if n := limit * 4; n < len(r) {
		return string(r[:n])
	}
	return s
}

func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.embeds++
	fn := s.embedFn
	s.mu.Unlock()
	if !s.o.Embeddings {
		if s.o.Kind == LlamaCpp {
			s.fail(w, http.StatusNotImplemented, "not_supported_error", "", "",
				"This server does not support embeddings. Start it with `--embeddings`")
			return
		}
		s.fail(w, http.StatusBadRequest, "invalid_request_error", "", "model", "The model does not support the Embeddings API")
		return
	}
	var req struct {
		Model          string   `json:"model"`
		Input          []string `json:"input"`
		EncodingFormat string   `json:"encoding_format"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" || len(req.Input) == 0 {
		s.fail(w, http.StatusBadRequest, "invalid_request_error", "", "input", "invalid embeddings request")
		return
	}
	for _, in := range req.Input {
		if in == "" {
			s.fail(w, http.StatusBadRequest, "invalid_request_error", "", "input", "'$.input' is invalid: empty string")
			return
		}
	}
	if fn == nil {
		fn = letterVectors
	}
	data := []any{}
	for i, v := range fn(req.Input) {
		data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": v})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": len(req.Input), "total_tokens": len(req.Input)}})
}

// letterVectors embeds each input as its normalised letter histogram.
func letterVectors(inputs []string) [][]float64 {
	out := make([][]float64, len(inputs))
	for i, in := range inputs {
		v := make([]float64, 26)
		for _, r := range strings.ToLower(in) {
			if r >= 'a' && r <= 'z' {
				v[r-'a']++
			}
		}
		var n float64
		for _, x := range v {
			n += x * x
		}
		if n > 0 {
			for j := range v {
				v[j] /= math.Sqrt(n)
			}
		}
		out[i] = v
	}
	return out
}
