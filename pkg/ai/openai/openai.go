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
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"supportplatform.dev/ai/httpretry"
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
	http   *http.Client
	policy httpretry.Policy
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
// with ErrNotConfigured, so callers can wire it unconditionally.
func New(cfg Config, opts ...Option) *Client {
	cfg.BaseURL = strings.TrimRight(strings.TrimSpace(cfg.BaseURL), "/")
	cfg.Model = strings.TrimSpace(cfg.Model)
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	c := &Client{
		cfg: cfg,
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
type CallOption func(*request)

// WithTemperature sets the sampling temperature; 0 asks for the most deterministic output.
func WithTemperature(t float64) CallOption { return func(r *request) { r.Temperature = &t } }

// WithMaxTokens bounds the length of the reply.
func WithMaxTokens(n int) CallOption { return func(r *request) { r.MaxTokens = n } }

type request struct {
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	Temperature *float64  `json:"temperature,omitempty"`
	MaxTokens   int       `json:"max_tokens,omitempty"`
	Stream      bool      `json:"stream"`
}

type reply struct {
	Choices []struct {
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

type errorReply struct {
	Error json.RawMessage `json:"error"`
}

// Complete sends the conversation and returns the text of the first choice.
func (c *Client) Complete(ctx context.Context, msgs []Message, opts ...CallOption) (string, error) {
	if !c.Configured() {
		return "", ErrNotConfigured
	}
	if len(msgs) == 0 {
		return "", errors.New("openai: no messages to send")
	}
	req := request{Model: c.cfg.Model, Messages: msgs}
	for _, o := range opts {
		o(&req)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("openai: encode request: %w", err)
	}

	var (
		text       string
		lastStatus int
		lastMsg    string
	)
	attempts, err := c.policy.Run(ctx, func(ctx context.Context) error {
		t, status, msg, aerr := c.attempt(ctx, body)
		text, lastStatus, lastMsg = t, status, msg
		return aerr
	})
	if err == nil {
		return text, nil
	}
	var mal *MalformedReplyError
	if errors.As(err, &mal) {
		return "", mal
	}
	// The caller's own deadline or cancellation also lands here: errors.Is still finds it through Err.
	return "", &UpstreamError{Provider: "openai", StatusCode: lastStatus, Message: lastMsg, Attempts: attempts, Err: err}
}

// attempt makes one HTTP exchange. Transient failures come back wrapped in *httpretry.Retry.
func (c *Client) attempt(ctx context.Context, body []byte) (text string, status int, msg string, err error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()

	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, c.cfg.BaseURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", 0, "", fmt.Errorf("build request: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if c.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}

	resp, err := c.http.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return "", 0, "", ctx.Err()
		}
		// A per-attempt timeout or a dropped connection may well succeed on the next try.
		return "", 0, "", &httpretry.Retry{Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	if err != nil {
		if ctx.Err() != nil {
			return "", resp.StatusCode, "", ctx.Err()
		}
		return "", resp.StatusCode, "", &httpretry.Retry{Err: fmt.Errorf("read reply: %w", err)}
	}

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := errorMessage(raw)
		err := fmt.Errorf("status %d", resp.StatusCode)
		if httpretry.Transient(resp.StatusCode) {
			after, ok := httpretry.RetryAfter(resp.Header, c.now())
			return "", resp.StatusCode, msg, &httpretry.Retry{Err: err, After: after, Requested: ok}
		}
		return "", resp.StatusCode, msg, err
	}

	text, err = parseReply(raw)
	return text, resp.StatusCode, "", err
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

// errorMessage extracts the provider's message from {"error":{"message":...}} or {"error":"..."}
// (both occur among compatible servers), falling back to a short prefix of the body.
func errorMessage(raw []byte) string {
	var er errorReply
	if json.Unmarshal(raw, &er) == nil && len(er.Error) > 0 {
		var s string
		if json.Unmarshal(er.Error, &s) == nil {
			return s
		}
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(er.Error, &obj) == nil && obj.Message != "" {
			return obj.Message
		}
	}
	s := strings.TrimSpace(string(raw))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
