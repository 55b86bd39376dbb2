// Package graph is the mail service's client for Microsoft Graph change-notification
// subscriptions on mail folders. One multi-tenant Entra app serves every customer: the client
// holds the app's id and secret and gets an app-only token per customer tenant (client
// credentials), cached until shortly before it expires.
//
// The subscription calls make one attempt each. Callers (the renewal job) decide whether to repeat
// a call, honouring the server's Retry-After (see RetryAfter and Retryable), because only they know
// the deadline they work to and whether a retry is still useful. The mail calls (messages.go,
// send.go) instead share one path (mailcall.go) that bounds concurrent requests per mailbox and
// retries throttled calls itself.
package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"supportplatform.dev/pkg/telemetry"
	"supportplatform.dev/services/mail/internal/mailboxlimit"
)

const (
	// DefaultTokenURL is Entra's token endpoint; {tenant} is the customer's tenant id.
	DefaultTokenURL = "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token"
	// DefaultBaseURL is Graph's v1.0 endpoint in the global cloud.
	DefaultBaseURL = "https://graph.microsoft.com/v1.0"
	// DefaultScope asks for the app permissions an admin consented to in the tenant.
	DefaultScope = "https://graph.microsoft.com/.default"
	// DefaultTimeout bounds one HTTP exchange when Config.HTTPClient is nil, and each subscription
	// call but the create.
	DefaultTimeout = 10 * time.Second
	// DefaultCreateTimeout bounds a subscription create: Graph validates the notification URL and
	// the lifecycle URL during the call (up to 10 s each), so a create can take 20 s and more. A
	// client that gives up sooner leaves subscriptions made after it stopped waiting.
	DefaultCreateTimeout = 35 * time.Second
)

// maxResponseBytes bounds how much of a reply is read: a subscription or a page of them is a few
// kilobytes, and a misbehaving server must not exhaust memory.
const maxResponseBytes = 1 << 20

// tokenEarlyExpiry is how long before its expiry a token is replaced, so that a request started
// just before expiry, or a clock running behind Entra's, does not present an expired token.
const tokenEarlyExpiry = 2 * time.Minute

// Config configures a Client.
type Config struct {
	// ClientID and ClientSecret are the multi-tenant app's credentials.
	ClientID, ClientSecret string
	// TokenURL contains "{tenant}"; empty uses DefaultTokenURL.
	TokenURL string
	// BaseURL is Graph's versioned root; empty uses DefaultBaseURL.
	BaseURL string
	// Scope is the token's scope; empty uses DefaultScope (national clouds have their own).
	Scope string
	// HTTPClient makes every request, token requests included; nil uses a client with
	// DefaultTimeout. A client-wide Timeout caps CreateTimeout: give one without (the subscription
	// calls bound themselves).
	HTTPClient *http.Client
	// CallTimeout bounds each subscription call but the create (token request included); 0 uses
	// DefaultTimeout.
	CallTimeout time.Duration
	// CreateTimeout bounds a subscription create; 0 uses DefaultCreateTimeout.
	CreateTimeout time.Duration
	// Now is the clock for token expiry and HTTP-date Retry-After values; nil uses time.Now.
	Now func() time.Time
	// MailboxConcurrency bounds the concurrent mail calls per tenant and mailbox in this process;
	// 0 uses DefaultMailboxConcurrency (Graph's limit). Ignored when Limiter is set.
	MailboxConcurrency int
	// Limiter, when not nil, bounds the mail calls per tenant and mailbox instead: Graph's limit
	// holds per app across every process that calls it (internal/mailboxlimit, in Redis).
	Limiter MailboxLimiter
	// MailRetries is how often a throttled mail call is repeated; 0 uses DefaultMailRetries, a
	// negative value none.
	MailRetries int
	// Sleep waits between mail call retries, or until ctx ends; nil uses a timer. Tests record.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Client calls Graph for the tenants of many customers. It is safe for concurrent use.
type Client struct {
	clientID, clientSecret string
	tokenURL               string
	scope                  string
	base                   *url.URL
	baseURL                string
	http                   *http.Client
	now                    func() time.Time
	mailboxes              MailboxLimiter
	mailRetries            int
	sleep                  func(ctx context.Context, d time.Duration) error
	callTimeout            time.Duration
	createTimeout          time.Duration

	mu     sync.Mutex
	tokens map[string]*tenantToken // by tenant id
}

// ErrInvalid marks a call the client refuses before sending: the arguments cannot be right.
var ErrInvalid = errors.New("graph: invalid argument")

// New checks cfg and returns a client. It makes no request.
func New(cfg Config) (*Client, error) {
	if strings.TrimSpace(cfg.ClientID) == "" || strings.TrimSpace(cfg.ClientSecret) == "" {
		return nil, errors.New("graph: client id and client secret are required")
	}
	c := &Client{
		clientID:     cfg.ClientID,
		clientSecret: cfg.ClientSecret,
		tokenURL:     cfg.TokenURL,
		scope:        cfg.Scope,
		http:         cfg.HTTPClient,
		now:          cfg.Now,
		tokens:       map[string]*tenantToken{},
	}
	if c.tokenURL == "" {
		c.tokenURL = DefaultTokenURL
	}
	if !strings.Contains(c.tokenURL, "{tenant}") {
		return nil, fmt.Errorf("graph: token URL %q has no {tenant}", c.tokenURL)
	}
	if _, err := parseHTTPURL(strings.ReplaceAll(c.tokenURL, "{tenant}", "tenant")); err != nil {
		return nil, fmt.Errorf("graph: token URL: %w", err)
	}
	baseURL := strings.TrimRight(cfg.BaseURL, "/")
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	base, err := parseHTTPURL(baseURL)
	if err != nil {
		return nil, fmt.Errorf("graph: base URL: %w", err)
	}
	c.base, c.baseURL = base, baseURL
	if c.scope == "" {
		c.scope = DefaultScope
	}
	// Every Graph call (token requests too) is a client span of the
	// request or import it serves.
	c.http = telemetry.HTTPClient(c.http, DefaultTimeout)
	if c.now == nil {
		c.now = time.Now
	}
	n := cfg.MailboxConcurrency
	if n <= 0 {
		n = DefaultMailboxConcurrency
	}
	// Per process unless the caller shares one across replicas.
	c.mailboxes = mailboxlimit.NewLocal(n)
	if cfg.Limiter != nil {
		c.mailboxes = cfg.Limiter
	}
	switch c.mailRetries = cfg.MailRetries; {
	case c.mailRetries == 0:
		c.mailRetries = DefaultMailRetries
	case c.mailRetries < 0:
		c.mailRetries = 0
	}
	c.sleep = cfg.Sleep
	c.callTimeout, c.createTimeout = cfg.CallTimeout, cfg.CreateTimeout
	if c.callTimeout <= 0 {
		c.callTimeout = DefaultTimeout
	}
	if c.createTimeout <= 0 {
		c.createTimeout = DefaultCreateTimeout
	}
	return c, nil
}

func parseHTTPURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an absolute http(s) URL", raw)
	}
	return u, nil
}

// tenantToken caches one tenant's app token. It is oauth2.ReuseTokenSource's job done against the
// injected clock: ReuseTokenSource reads the wall clock, so tests could not expire a token.
type tenantToken struct {
	tenant string
	conf   clientcredentials.Config
	http   *http.Client
	now    func() time.Time
	secret string // only to keep it out of error messages

	mu     sync.Mutex
	access string
	expiry time.Time
}

func (c *Client) tenantToken(tenant string) (*tenantToken, error) {
	if !validTenant(tenant) {
		return nil, fmt.Errorf("%w: tenant id %q", ErrInvalid, tenant)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tokens[tenant]
	if !ok {
		t = &tenantToken{
			tenant: tenant,
			conf: clientcredentials.Config{
				ClientID:     c.clientID,
				ClientSecret: c.clientSecret,
				TokenURL:     strings.ReplaceAll(c.tokenURL, "{tenant}", url.PathEscape(tenant)),
				Scopes:       []string{c.scope},
				// Entra takes both styles; fixing one avoids auto-detection's second request after
				// every failure.
				AuthStyle: oauth2.AuthStyleInParams,
			},
			http:   c.http,
			now:    c.now,
			secret: c.clientSecret,
		}
		c.tokens[tenant] = t
	}
	return t, nil
}

// validTenant accepts what Entra names tenants by: a GUID or a domain name. Anything else would
// change the token URL's path.
func validTenant(tenant string) bool {
	if tenant == "" || tenant == "." || tenant == ".." || len(tenant) > 256 {
		return false
	}
	for _, r := range tenant {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// token returns a valid access token, asking Entra only when the cached one is near expiry. The
// lock is held while asking, so concurrent callers for one tenant make one request.
func (t *tenantToken) token(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if t.access != "" && now.Before(t.expiry.Add(-tokenEarlyExpiry)) {
		return t.access, nil
	}
	tok, err := t.conf.Token(context.WithValue(ctx, oauth2.HTTPClient, t.http))
	if err != nil {
		return "", newTokenError(t.tenant, t.secret, err, now)
	}
	if tok.AccessToken == "" {
		return "", &TokenError{TenantID: t.tenant, Description: "the token endpoint answered without an access token"}
	}
	// clientcredentials turns expires_in into a wall-clock Expiry (and drops ExpiresIn); the
	// remaining lifetime is carried over to the injected clock, so that token expiry follows the
	// same time as everything else. A token without an expiry is used once.
	t.access, t.expiry = tok.AccessToken, now
	if !tok.Expiry.IsZero() {
		t.expiry = now.Add(time.Until(tok.Expiry))
	}
	return t.access, nil
}

// forget drops access if it is still the cached token: Graph refused it (revoked, or the tenant's
// consent changed), and the next call should ask for a new one rather than fail until expiry.
func (t *tenantToken) forget(access string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.access == access {
		t.access = ""
	}
}

// call is one Graph request: body (if any) as JSON, the reply decoded into out (if any), within
// timeout (the token request included).
func (c *Client) call(ctx context.Context, timeout time.Duration, tenant, op, method, rawURL string, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tt, err := c.tenantToken(tenant)
	if err != nil {
		return fmt.Errorf("graph: %s: %w", op, err)
	}
	access, err := tt.token(ctx)
	if err != nil {
		return fmt.Errorf("graph: %s: %w", op, err)
	}
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("graph: %s: encode request: %w", op, err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, rd)
	if err != nil {
		return fmt.Errorf("graph: %s: %w", op, err)
	}
	req.Header.Set("Authorization", "Bearer "+access)
	req.Header.Set("Accept", "application/json")
	// Immutable ids on every call: message ids otherwise change when a message moves, and the
	// ids in notifications follow what the subscription was created with.
	req.Header.Set("Prefer", `IdType="ImmutableId"`)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}

	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("graph: %s: %w", op, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return fmt.Errorf("graph: %s: read reply: %w", op, err)
	}
	if len(raw) > maxResponseBytes {
		return fmt.Errorf("graph: %s: reply larger than %d bytes", op, maxResponseBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if resp.StatusCode == http.StatusUnauthorized {
			tt.forget(access)
		}
		return newError(op, resp, raw, c.now())
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("graph: %s: malformed reply (status %d): %w", op, resp.StatusCode, err)
	}
	return nil
}

// sameOrigin reports whether link points at the configured Graph, so that a bearer token is never
// sent to a host a reply named.
func (c *Client) sameOrigin(link string) bool {
	u, err := url.Parse(link)
	return err == nil && strings.EqualFold(u.Scheme, c.base.Scheme) && strings.EqualFold(u.Host, c.base.Host)
}
