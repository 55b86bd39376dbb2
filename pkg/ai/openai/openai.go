// Package openai is a client for the OpenAI chat-completions HTTP API (POST {baseURL}/chat/completions).
// The same wire format is spoken by hosted providers and by local servers such as Ollama, vLLM and
// llama.cpp, so the base URL, key and model all come from configuration.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"supportplatform.dev/pkg/httpretry"
)

// DefaultTimeout bounds one attempt when Config.Timeout is zero. Local models on CPU can take tens
// of seconds for a long reply, so the default is generous.
const DefaultTimeout = 60 * time.Second

// DefaultMinAttempt is the least time left before the caller's deadline for a retry to be started
// (httpretry.Policy.MinAttempt), capped at Config.Timeout: a chat completion rarely answers sooner,
// and a retry cut short by the deadline only loads the server.
const DefaultMinAttempt = 2 * time.Second

// maxReplyBytes bounds how much of a reply is read, so that a misbehaving server cannot exhaust memory.
const maxReplyBytes = 8 << 20

// ErrNotConfigured is returned when no base URL or no model is configured.
var ErrNotConfigured = errors.New("openai: no chat-completions provider configured (base URL and model are required)")

// Config selects the provider. BaseURL includes the API version path, e.g. https://api.openai.com/v1
// or http://localhost:11434/v1 for Ollama.
type Config struct {
	BaseURL string
	// APIKey is sent as a Bearer token when set; local servers usually need none.
	APIKey string
	Model  string
	// Timeout bounds each attempt (not the whole call, which the caller's context bounds: a
	// request's budget, REQUEST_TIMEOUT, ends the retries; see MinAttempt).
	Timeout time.Duration
	// MaxRetries is the number of retries after the first attempt on 429, 5xx, timeouts and
	// connection failures.
	MaxRetries int
	// Server is the kind of server at BaseURL (ServerOpenAI, ServerVLLM, ServerLlamaCpp,
	// ServerOllama; "" or ServerAuto guesses from the URL). It decides the defaults below.
	Server string
	// TokenParam names the output bound sent: TokenParamMaxCompletionTokens or
	// TokenParamMaxTokens; "" or auto: max_completion_tokens for OpenAI, vLLM and reasoning
	// models, max_tokens for llama.cpp, Ollama and unknown servers.
	TokenParam string
	// Reasoning says the model is a reasoning model (ReasoningYes/ReasoningNo); "" or auto
	// recognises OpenAI's o1, o3, o4 and gpt-5 families by name. A reasoning model gets no
	// temperature, max_completion_tokens, and ReasoningTokens more output allowance.
	Reasoning string
	// ResponseFormat is how JSON answers are asked for (FormatJSONSchema with strict,
	// FormatJSONObject, FormatNone); "" or auto: json_schema, json_object for unknown servers.
	ResponseFormat string
	// ContextTokens is the model's context length as the server runs it; prompts are kept
	// inside it. 0 takes the server kind's default.
	ContextTokens int
	// ReasoningTokens is a reasoning model's allowance for hidden reasoning on top of a call's
	// visible-output bound; 0 is DefaultReasoningTokens.
	ReasoningTokens int
	// EmbeddingURL and EmbeddingKey address the server of Embed when it is not the chat server
	// (vLLM and llama.cpp serve embeddings from a process of their own). Empty, Embed uses
	// BaseURL and APIKey.
	EmbeddingURL string
	EmbeddingKey string
}

// Check reports a setting that is not one of its documented values.
func (cfg Config) Check() error {
	_, err := resolve(cfg)
	return err
}

// Message is one chat message. Role is "system", "user" or "assistant".
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// UpstreamError is a failure reported by the server or on the way to it, after the retries.
type UpstreamError = httpretry.UpstreamError

// MalformedReplyError is a 2xx reply that cannot be read as the documented shape.
type MalformedReplyError = httpretry.MalformedReplyError

// Client calls one configured provider. It is safe for concurrent use.
type Client struct {
	cfg    Config
	p      params
	cfgErr error
	http   *http.Client
	policy httpretry.Policy

	// What a server refused once is not sent again (see adapt).
	useCompletionTokens atomic.Bool
	noTemperature       atomic.Bool
	formatDowngrades    atomic.Int32
}

// Option adjusts a Client; options exist for tests and for sharing an HTTP transport.
type Option func(*Client)

// WithHTTPClient replaces the HTTP client (its Timeout should be zero: attempts have their own).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithSleep replaces the wait between retries.
func WithSleep(sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(c *Client) { c.policy.Sleep = sleep }
}

// WithClock replaces the clock used to read HTTP-date Retry-After values.
func WithClock(now func() time.Time) Option { return func(c *Client) { c.policy.Now = now } }

// WithMinAttempt sets the least time left before the caller's deadline for a retry to start.
func WithMinAttempt(d time.Duration) Option { return func(c *Client) { c.policy.MinAttempt = d } }

// WithBackoff sets the exponential backoff used when the server gives no Retry-After, and the cap on
// a server-requested wait.
func WithBackoff(base, maxDelay, maxWait time.Duration) Option {
	return func(c *Client) {
		c.policy.BaseDelay, c.policy.MaxDelay, c.policy.MaxWait = base, maxDelay, maxWait
	}
}

// New returns a client for cfg. A client built from an empty Config is valid and answers every call
// with ErrNotConfigured, so callers can wire it unconditionally. A setting that is not one of its
// documented values (Config.Check) makes every call fail with that error.
func New(cfg Config, opts ...Option) *Client {
	cfg.BaseURL = strings.TrimRight(strings.TrimSpace(cfg.BaseURL), "/")
	cfg.EmbeddingURL = strings.TrimRight(strings.TrimSpace(cfg.EmbeddingURL), "/")
	cfg.Model = strings.TrimSpace(cfg.Model)
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	p, err := resolve(cfg)
	c := &Client{
		cfg:    cfg,
		p:      p,
		cfgErr: err,
		// Each attempt is a client span of the caller's trace and carries
		// its traceparent.
		http: &http.Client{Transport: otelhttp.NewTransport(http.DefaultTransport)},
		policy: httpretry.Policy{
			MaxRetries: cfg.MaxRetries,
			BaseDelay:  500 * time.Millisecond,
			MaxDelay:   8 * time.Second,
			MaxWait:    30 * time.Second,
			MinAttempt: min(DefaultMinAttempt, cfg.Timeout),
		},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Configured reports whether calls can reach a provider.
func (c *Client) Configured() bool { return c.cfg.BaseURL != "" && c.cfg.Model != "" }

// Model returns the configured model name.
func (c *Client) Model() string { return c.cfg.Model }

// CallOption tunes one completion request.
type CallOption func(*call)

type call struct {
	temperature *float64
	maxTokens   int
	schemaName  string
	schema      map[string]any
}

// WithTemperature sets the sampling temperature; 0 asks for the most deterministic output.
// Reasoning models take none, and get none.
func WithTemperature(t float64) CallOption { return func(r *call) { r.temperature = &t } }

// WithMaxTokens bounds the length of the visible reply (sent as max_completion_tokens or
// max_tokens, see Config.TokenParam; a reasoning model's allowance is added).
func WithMaxTokens(n int) CallOption { return func(r *call) { r.maxTokens = n } }

// WithJSON asks for an answer that is one JSON object following schema (a JSON Schema object
// fit for strict structured outputs: every object lists all its properties as required and
// has additionalProperties false). How it is asked depends on Config.ResponseFormat; the
// answer may still come wrapped (read it with JSONText) and must still be checked.
func WithJSON(name string, schema map[string]any) CallOption {
	return func(r *call) { r.schemaName, r.schema = name, schema }
}

type request struct {
	Model               string          `json:"model"`
	Messages            []Message       `json:"messages"`
	Temperature         *float64        `json:"temperature,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	ResponseFormat      *responseFormat `json:"response_format,omitempty"`
	Stream              bool            `json:"stream"`
}

type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema,omitempty"`
}

type jsonSchema struct {
	Name   string         `json:"name"`
	Strict bool           `json:"strict"`
	Schema map[string]any `json:"schema"`
}

type reply struct {
	Choices []struct {
		Message struct {
			Content json.RawMessage `json:"content"`
			Refusal *string         `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// formats in the order a refused one is downgraded.
var formats = []string{FormatJSONSchema, FormatJSONObject, FormatNone}

// build is the request for msgs under cl, with what the server taught the client.
func (c *Client) build(msgs []Message, cl call) request {
	req := request{Model: c.cfg.Model, Messages: msgs}
	if cl.temperature != nil && !c.p.reasoning && !c.noTemperature.Load() {
		req.Temperature = cl.temperature
	}
	if cl.maxTokens > 0 {
		n := c.outputReserve(cl.maxTokens)
		if c.p.tokenParam == TokenParamMaxCompletionTokens || c.useCompletionTokens.Load() {
			req.MaxCompletionTokens = n
		} else {
			req.MaxTokens = n
		}
	}
	if cl.schema != nil {
		format := c.p.format
		if d := int(c.formatDowngrades.Load()); d > 0 {
			i := slices.Index(formats, format) + d
			format = formats[min(i, len(formats)-1)]
		}
		switch format {
		case FormatJSONSchema:
			req.ResponseFormat = &responseFormat{Type: FormatJSONSchema,
				JSONSchema: &jsonSchema{Name: cl.schemaName, Strict: true, Schema: cl.schema}}
		case FormatJSONObject:
			req.ResponseFormat = &responseFormat{Type: FormatJSONObject}
		}
	}
	return req
}

// maxAdaptations bounds the requests one call re-sends after a refused parameter.
const maxAdaptations = 3

// Complete sends the conversation and returns the text of the first choice. A prompt that does
// not fit in the context with its output (PromptBudget) is a *ContextError and is not sent. An
// answer cut at the token limit is ErrTruncated, a refusal a *RefusalError; neither is retried.
func (c *Client) Complete(ctx context.Context, msgs []Message, opts ...CallOption) (string, error) {
	if !c.Configured() {
		return "", ErrNotConfigured
	}
	if c.cfgErr != nil {
		return "", c.cfgErr
	}
	if len(msgs) == 0 {
		return "", errors.New("openai: no messages to send")
	}
	var cl call
	for _, o := range opts {
		o(&cl)
	}
	if prompt := EstimateTokens(msgs); prompt > c.PromptBudget(cl.maxTokens) {
		return "", &ContextError{PromptTokens: prompt, OutputTokens: c.outputReserve(cl.maxTokens), ContextTokens: c.p.contextTokens}
	}
	for n := 0; ; n++ {
		req := c.build(msgs, cl)
		body, err := json.Marshal(req)
		if err != nil {
			return "", fmt.Errorf("openai: encode request: %w", err)
		}
		text, refused, err := c.complete(ctx, body)
		if err != nil && n < maxAdaptations && c.adapt(req, refused) {
			continue
		}
		return text, err
	}
}

// adapt learns from a 400 naming a parameter the model does not take (OpenAI's reasoning
// models: unsupported_parameter for max_tokens, unsupported_value for temperature; a server
// without structured outputs: response_format) and reports whether req is worth sending again
// without it. AI_TOKEN_PARAM, AI_REASONING_MODEL and AI_RESPONSE_FORMAT set this right from the
// start; this keeps a model the settings did not foresee working.
func (c *Client) adapt(req request, refused *apiError) bool {
	if refused == nil {
		return false
	}
	switch param := refused.Param; {
	case param == "max_tokens" && req.MaxTokens > 0:
		return !c.useCompletionTokens.Swap(true)
	case param == "temperature" && req.Temperature != nil:
		return !c.noTemperature.Swap(true)
	case strings.HasPrefix(param, "response_format") && req.ResponseFormat != nil:
		c.formatDowngrades.Add(1)
		return true
	}
	return false
}

// complete runs the attempts of one request body. refused is the server's error of a 400 that
// named a parameter.
func (c *Client) complete(ctx context.Context, body []byte) (text string, refused *apiError, err error) {
	var (
		lastStatus int
		lastErr    apiError
	)
	attempts, err := c.policy.Run(ctx, func(ctx context.Context) error {
		raw, status, ae, aerr := c.post(ctx, c.cfg.BaseURL, c.cfg.APIKey, "/chat/completions", body)
		lastStatus, lastErr = status, ae
		if aerr != nil {
			return aerr
		}
		t, perr := parseReply(raw)
		text = t
		return perr
	})
	if err == nil {
		return text, nil, nil
	}
	var (
		mal *MalformedReplyError
		ref *RefusalError
	)
	switch {
	case errors.As(err, &mal):
		return "", nil, mal
	case errors.As(err, &ref):
		return "", nil, ref
	case errors.Is(err, ErrTruncated):
		return "", nil, err
	}
	if lastStatus == http.StatusBadRequest && lastErr.Param != "" {
		refused = &lastErr
	}
	// The caller's own deadline or cancellation also lands here: errors.Is still finds it through Err.
	return "", refused, &UpstreamError{Provider: "openai", StatusCode: lastStatus, Message: lastErr.Message, Attempts: attempts, Err: err}
}

// post makes one HTTP exchange and returns the body of a 2xx reply, or the server's error.
// Transient failures come back wrapped in *httpretry.Retry.
func (c *Client) post(ctx context.Context, base, key, path string, body []byte) (raw []byte, status int, ae apiError, err error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()

	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, base+path, bytes.NewReader(body))
	if err != nil {
		return nil, 0, ae, fmt.Errorf("build request: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if key != "" {
		hreq.Header.Set("Authorization", "Bearer "+key)
	}

	resp, err := c.http.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, ae, ctx.Err()
		}
		// A per-attempt timeout or a dropped connection may well succeed on the next try.
		return nil, 0, ae, &httpretry.Retry{Err: err}
	}
	defer resp.Body.Close()
	raw, err = io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	if err != nil {
		if ctx.Err() != nil {
			return nil, resp.StatusCode, ae, ctx.Err()
		}
		return nil, resp.StatusCode, ae, &httpretry.Retry{Err: fmt.Errorf("read reply: %w", err)}
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return raw, resp.StatusCode, ae, nil
	}
	ae = parseError(raw)
	err = fmt.Errorf("status %d", resp.StatusCode)
	switch {
	case ae.contextExceeded():
		// llama.cpp answers an overlong prompt with a 500: the same prompt fails again.
		return nil, resp.StatusCode, ae, fmt.Errorf("%w: %w", err, ErrContextExceeded)
	case ae.is("insufficient_quota"):
		// A 429 that no wait cures.
		return nil, resp.StatusCode, ae, fmt.Errorf("%w: %w", err, ErrQuota)
	case httpretry.Transient(resp.StatusCode):
		after, ok := httpretry.RetryAfter(resp.Header, c.now())
		return nil, resp.StatusCode, ae, &httpretry.Retry{Err: err, After: after, Requested: ok}
	}
	return nil, resp.StatusCode, ae, err
}

func (c *Client) now() time.Time {
	if c.policy.Now != nil {
		return c.policy.Now()
	}
	return time.Now()
}

func parseReply(raw []byte) (string, error) {
	var r reply
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", &MalformedReplyError{Provider: "openai", Reason: "invalid JSON", Err: err}
	}
	if len(r.Choices) == 0 {
		return "", &MalformedReplyError{Provider: "openai", Reason: "no choices"}
	}
	ch := r.Choices[0]
	if ch.Message.Refusal != nil && strings.TrimSpace(*ch.Message.Refusal) != "" {
		return "", &RefusalError{Refusal: *ch.Message.Refusal}
	}
	switch ch.FinishReason {
	case "length":
		return "", ErrTruncated
	case "content_filter":
		return "", &RefusalError{Refusal: "finish_reason content_filter"}
	}
	text, ok := contentText(ch.Message.Content)
	if !ok {
		if ch.FinishReason != "" {
			return "", &MalformedReplyError{Provider: "openai", Reason: "first choice has no text content (finish_reason " + ch.FinishReason + ")"}
		}
		return "", &MalformedReplyError{Provider: "openai", Reason: "first choice has no text content"}
	}
	return text, nil
}

// contentText accepts the two shapes servers use for message content: a string, or an array of
// typed parts of which the text parts are concatenated.
func contentText(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", false
	}
	var b strings.Builder
	found := false
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
			found = true
		}
	}
	return b.String(), found
}

// apiError is a server's error answer: {"error":{"message","type","code","param"}} (OpenAI,
// vLLM, llama.cpp, whose code is the HTTP status as a number) or {"error":"..."} (Ollama).
type apiError struct {
	Message string
	Type    string
	Code    string
	Param   string
}

func (e apiError) is(name string) bool { return e.Type == name || e.Code == name }

// contextExceeded recognises the servers' ways of saying the prompt is too long: OpenAI's
// context_length_exceeded, llama.cpp's exceed_context_size_error (and the plain "Context size
// has been exceeded." of some builds), vLLM's "maximum context length" message.
func (e apiError) contextExceeded() bool {
	if e.is("context_length_exceeded") || e.is("exceed_context_size_error") {
		return true
	}
	m := strings.ToLower(e.Message)
	return strings.Contains(m, "context size") || strings.Contains(m, "maximum context length") ||
		strings.Contains(m, "context length exceeded")
}

// parseError extracts the provider's error, falling back to a short prefix of the body as the
// message.
func parseError(raw []byte) apiError {
	var er struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &er) == nil && len(er.Error) > 0 {
		var s string
		if json.Unmarshal(er.Error, &s) == nil {
			return apiError{Message: s}
		}
		var obj struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
			Param   *string         `json:"param"`
		}
		if json.Unmarshal(er.Error, &obj) == nil && obj.Message != "" {
			ae := apiError{Message: obj.Message, Type: obj.Type}
			_ = json.Unmarshal(obj.Code, &ae.Code) // a number (llama.cpp) stays ""
			if obj.Param != nil {
				ae.Param = *obj.Param
			}
			return ae
		}
	}
	s := strings.TrimSpace(string(raw))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return apiError{Message: s}
}
