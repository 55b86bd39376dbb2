// Package libretranslate is a client for a LibreTranslate server (self-hosted or hosted): POST
// /translate and GET /languages. It implements mt.Translator, serving exactly the pairs the server
// lists.
package libretranslate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"golang.org/x/text/language"

	"supportplatform.dev/ai/langcode"
	"supportplatform.dev/ai/mt"
	"supportplatform.dev/pkg/httpretry"
)

const (
	// DefaultTimeout bounds one attempt when Config.Timeout is zero.
	DefaultTimeout = 30 * time.Second
	// DefaultLanguagesTTL is how long the server's language list is trusted when Config.LanguagesTTL
	// is zero. Servers gain languages only when an operator installs models, so an hour is plenty.
	DefaultLanguagesTTL = time.Hour
	maxReplyBytes       = 8 << 20
)

// ErrNotConfigured is returned when no base URL is configured.
var ErrNotConfigured = errors.New("libretranslate: no server configured")

// Config locates the server.
type Config struct {
	BaseURL string
	// APIKey is sent as api_key when set (hosted instances require one, self-hosted usually not).
	APIKey       string
	Timeout      time.Duration
	MaxRetries   int
	LanguagesTTL time.Duration
}

// Language is one entry of GET /languages.
type Language struct {
	Code    string   `json:"code"`
	Name    string   `json:"name"`
	Targets []string `json:"targets"`
}

// APIError is a failure reported by the server or on the way to it, after the retries.
type APIError = httpretry.UpstreamError

// MalformedReplyError is a 2xx reply that cannot be read as the documented shape.
type MalformedReplyError = httpretry.MalformedReplyError

// Client talks to one server. It is safe for concurrent use.
type Client struct {
	cfg    Config
	http   *http.Client
	policy httpretry.Policy
	now    func() time.Time

	mu        sync.Mutex
	langs     *languageIndex
	fetchedAt time.Time
}

var _ mt.Translator = (*Client)(nil)

// Option adjusts a Client for tests or transport sharing.
type Option func(*Client)

// WithHTTPClient replaces the HTTP client (its Timeout should be zero: attempts have their own).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithSleep replaces the wait between retries.
func WithSleep(sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(c *Client) { c.policy.Sleep = sleep }
}

// WithClock replaces the clock used for the language-list TTL and HTTP-date Retry-After values.
func WithClock(now func() time.Time) Option {
	return func(c *Client) { c.now = now; c.policy.Now = now }
}

// New returns a client. A client without a base URL is valid: it serves no pair and its calls
// return ErrNotConfigured.
func New(cfg Config, opts ...Option) *Client {
	cfg.BaseURL = strings.TrimRight(strings.TrimSpace(cfg.BaseURL), "/")
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.LanguagesTTL <= 0 {
		cfg.LanguagesTTL = DefaultLanguagesTTL
	}
	if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	c := &Client{
		cfg: cfg,
		// Each attempt is a client span of the caller's trace and carries
		// its traceparent.
		http: &http.Client{Transport: otelhttp.NewTransport(http.DefaultTransport)},
		now:  time.Now,
		policy: httpretry.Policy{
			MaxRetries: cfg.MaxRetries,
			BaseDelay:  250 * time.Millisecond,
			MaxDelay:   4 * time.Second,
			MaxWait:    30 * time.Second,
		},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Configured reports whether a server is set.
func (c *Client) Configured() bool { return c.cfg.BaseURL != "" }

// Name implements mt.Translator.
func (c *Client) Name() string { return "libretranslate" }

// Languages returns the server's language list, fetching it when the cached copy is older than
// the TTL. When a refresh fails the previous list is kept: a server that answered an hour ago
// most likely still serves the same pairs, and /translate will say so if not.
func (c *Client) Languages(ctx context.Context) ([]Language, error) {
	idx, err := c.index(ctx)
	if err != nil {
		return nil, err
	}
	return append([]Language(nil), idx.list...), nil
}

func (c *Client) index(ctx context.Context) (*languageIndex, error) {
	if !c.Configured() {
		return nil, ErrNotConfigured
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.langs != nil && c.now().Sub(c.fetchedAt) < c.cfg.LanguagesTTL {
		return c.langs, nil
	}
	var list []Language
	err := c.call(ctx, http.MethodGet, "/languages", nil, &list)
	if err != nil {
		if c.langs != nil {
			return c.langs, nil
		}
		return nil, err
	}
	c.langs = newLanguageIndex(list)
	c.fetchedAt = c.now()
	return c.langs, nil
}

// Supports implements mt.Translator.
func (c *Client) Supports(ctx context.Context, p mt.Pair) (bool, error) {
	if !c.Configured() {
		return false, nil
	}
	idx, err := c.index(ctx)
	if err != nil {
		return false, err
	}
	_, _, ok := idx.resolve(p)
	return ok, nil
}

type translateRequest struct {
	Q      any    `json:"q"`
	Source string `json:"source"`
	Target string `json:"target"`
	Format string `json:"format"`
	APIKey string `json:"api_key,omitempty"`
}

// Translate implements mt.Translator. Several texts go in one request (q as an array), which the
// server translates independently.
func (c *Client) Translate(ctx context.Context, p mt.Pair, texts []string) ([]string, error) {
	if !c.Configured() {
		return nil, ErrNotConfigured
	}
	if len(texts) == 0 {
		return nil, nil
	}
	idx, err := c.index(ctx)
	if err != nil {
		return nil, err
	}
	src, tgt, ok := idx.resolve(p)
	if !ok {
		return nil, fmt.Errorf("libretranslate: %s: %w", p, mt.ErrUnsupportedPair)
	}
	req := translateRequest{Source: src, Target: tgt, Format: "text", APIKey: c.cfg.APIKey}
	if len(texts) == 1 {
		req.Q = texts[0]
		var out struct {
			TranslatedText *string `json:"translatedText"`
		}
		if err := c.call(ctx, http.MethodPost, "/translate", req, &out); err != nil {
			return nil, err
		}
		if out.TranslatedText == nil {
			return nil, &MalformedReplyError{Provider: "libretranslate", Reason: "no translatedText"}
		}
		return []string{*out.TranslatedText}, nil
	}
	req.Q = texts
	var out struct {
		TranslatedText []string `json:"translatedText"`
	}
	if err := c.call(ctx, http.MethodPost, "/translate", req, &out); err != nil {
		return nil, err
	}
	if len(out.TranslatedText) != len(texts) {
		return nil, &MalformedReplyError{Provider: "libretranslate", Reason: fmt.Sprintf("sent %d texts, got %d translations", len(texts), len(out.TranslatedText))}
	}
	return out.TranslatedText, nil
}

// call performs one API call with retries and decodes a 2xx JSON reply into out.
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("libretranslate: encode request: %w", err)
		}
	}
	var lastStatus int
	var lastMsg string
	attempts, err := c.policy.Run(ctx, func(ctx context.Context) error {
		status, msg, err := c.attempt(ctx, method, path, body, out)
		lastStatus, lastMsg = status, msg
		return err
	})
	if err == nil {
		return nil
	}
	var mal *MalformedReplyError
	if errors.As(err, &mal) {
		return mal
	}
	return &APIError{Provider: "libretranslate", StatusCode: lastStatus, Message: lastMsg, Attempts: attempts, Err: err}
}

func (c *Client) attempt(ctx context.Context, method, path string, body []byte, out any) (int, string, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(actx, method, c.cfg.BaseURL+path, rd)
	if err != nil {
		return 0, "", fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, "", ctx.Err()
		}
		return 0, "", &httpretry.Retry{Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	if err != nil {
		if ctx.Err() != nil {
			return resp.StatusCode, "", ctx.Err()
		}
		return resp.StatusCode, "", &httpretry.Retry{Err: fmt.Errorf("read reply: %w", err)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := errorMessage(raw)
		err := fmt.Errorf("status %d", resp.StatusCode)
		if httpretry.Transient(resp.StatusCode) {
			after, ok := httpretry.RetryAfter(resp.Header, c.now())
			return resp.StatusCode, msg, &httpretry.Retry{Err: err, After: after, Requested: ok}
		}
		return resp.StatusCode, msg, err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return resp.StatusCode, "", &MalformedReplyError{Provider: "libretranslate", Reason: "invalid JSON", Err: err}
	}
	return resp.StatusCode, "", nil
}

func errorMessage(raw []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error != "" {
		return e.Error
	}
	s := strings.TrimSpace(string(raw))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// languageIndex maps normalised ISO codes to the server's own codes. Servers name some languages
// with region or script tags (pt-BR, zh-Hans, zh-Hant) and may list several for one language; the
// index prefers the plain code and otherwise the first one listed.
type languageIndex struct {
	list    []Language
	code    map[string]string          // normalised -> server code
	targets map[string]map[string]bool // server source code -> server target codes
}

func newLanguageIndex(list []Language) *languageIndex {
	idx := &languageIndex{list: list, code: map[string]string{}, targets: map[string]map[string]bool{}}
	for _, l := range list {
		n, ok := normaliseServerCode(l.Code)
		if !ok {
			continue
		}
		if cur, seen := idx.code[n]; !seen || (cur != n && strings.EqualFold(l.Code, n)) {
			idx.code[n] = l.Code
		}
		t := map[string]bool{}
		for _, target := range l.Targets {
			t[target] = true
		}
		idx.targets[l.Code] = t
	}
	return idx
}

func normaliseServerCode(code string) (string, bool) {
	tag, err := language.Parse(code)
	if err != nil {
		return "", false
	}
	base, _ := tag.Base()
	n, err := langcode.Normalize(base.String())
	return n, err == nil
}

// resolve returns the server's codes for p. An unknown or uncertain source is sent as "auto"
// (the server then detects the language itself), served when some listed language reaches the
// target.
func (idx *languageIndex) resolve(p mt.Pair) (src, tgt string, ok bool) {
	tgt, ok = idx.code[p.Target]
	if !ok {
		return "", "", false
	}
	if p.Source == "" || p.SourceUncertain {
		for _, t := range idx.targets {
			if t[tgt] {
				return "auto", tgt, true
			}
		}
		return "", "", false
	}
	src, ok = idx.code[p.Source]
	if !ok || !idx.targets[src][tgt] {
		return "", "", false
	}
	return src, tgt, true
}
