// Package entra is the mail service's client of the Microsoft identity
// platform (Entra ID) for connecting a customer's Microsoft 365 tenant: the
// OpenID Connect sign-in of the tenant's admin (authorization code flow
// with PKCE at the organizations authority), the verification of the
// id_token against the platform's published keys, and the admin consent
// URL for the tenant the sign-in proved.
package entra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"supportplatform.dev/pkg/telemetry"
	"supportplatform.dev/services/mail/internal/mail"
)

// DefaultLoginURL is the identity platform of the global cloud.
const DefaultLoginURL = "https://login.microsoftonline.com"

// GraphDefaultScope asks admin consent for the app's configured application
// permissions on Microsoft Graph.
const GraphDefaultScope = "https://graph.microsoft.com/.default"

// DefaultSkew is the clock skew allowed on exp, nbf and iat.
const DefaultSkew = 2 * time.Minute

// maxTokenResponse bounds the token endpoint's answer read.
const maxTokenResponse = 256 << 10

// guidPattern is an Entra tenant id.
var guidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// Config configures a Client.
type Config struct {
	// ClientID and ClientSecret are the multi-tenant app's credentials (the
	// same app the mail services take Graph tokens for).
	ClientID, ClientSecret string
	// LoginURL is the identity platform's root; empty uses DefaultLoginURL.
	// The expected issuer of id_tokens is LoginURL/{tid}/v2.0.
	LoginURL string
	// RedirectURI is the callback registered on the app.
	RedirectURI string
	// HTTPClient makes the token and key requests; nil uses a client with a
	// 10 s timeout.
	HTTPClient *http.Client
	// Now is the clock of the token checks; nil uses time.Now.
	Now func() time.Time
	// Skew is the leeway on exp, nbf and iat; 0 uses DefaultSkew.
	Skew time.Duration
	// KeyRefetch is the least time between two key fetches for an unknown
	// kid; 0 uses DefaultKeyRefetch.
	KeyRefetch time.Duration
}

// Client talks to the identity platform. It is safe for concurrent use.
type Client struct {
	clientID, clientSecret string
	login, redirectURI     string
	http                   *http.Client
	now                    func() time.Time
	skew                   time.Duration
	keys                   *keySet
}

// New checks cfg and returns a client; it makes no request.
func New(cfg Config) (*Client, error) {
	if cfg.ClientID == "" || cfg.ClientSecret == "" {
		return nil, errors.New("entra: client id and client secret are required")
	}
	login := strings.TrimRight(cfg.LoginURL, "/")
	if login == "" {
		login = DefaultLoginURL
	}
	if u, err := url.Parse(login); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("entra: login URL %q is not an absolute URL", cfg.LoginURL)
	}
	if u, err := url.Parse(cfg.RedirectURI); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("entra: redirect URI %q is not an absolute URL", cfg.RedirectURI)
	}
	c := &Client{clientID: cfg.ClientID, clientSecret: cfg.ClientSecret, login: login, redirectURI: cfg.RedirectURI,
		http: telemetry.HTTPClient(cfg.HTTPClient, 10*time.Second), now: cfg.Now, skew: cfg.Skew}
	if c.now == nil {
		c.now = time.Now
	}
	if c.skew <= 0 {
		c.skew = DefaultSkew
	}
	c.keys = newKeySet(login+"/organizations/discovery/v2.0/keys", c.http, c.now, cfg.KeyRefetch)
	return c, nil
}

// AuthorizeURL is where the browser signs the Microsoft admin in: the
// organizations authority (work accounts of any tenant), response_type
// code, scope openid profile, response_mode query, PKCE S256. loginHint
// (optional) pre-fills the account.
func (c *Client) AuthorizeURL(state, nonce, codeChallenge, loginHint string) string {
	q := url.Values{}
	q.Set("client_id", c.clientID)
	q.Set("response_type", "code")
	q.Set("redirect_uri", c.redirectURI)
	q.Set("response_mode", "query")
	q.Set("scope", "openid profile")
	q.Set("state", state)
	q.Set("nonce", nonce)
	q.Set("code_challenge", codeChallenge)
	q.Set("code_challenge_method", "S256")
	if loginHint != "" {
		q.Set("login_hint", loginHint)
	}
	return c.login + "/organizations/oauth2/v2.0/authorize?" + q.Encode()
}

// ConsentURL is where the browser takes the signed-in admin to grant the
// app's application permissions in tenantID.
func (c *Client) ConsentURL(tenantID, state string) string {
	q := url.Values{}
	q.Set("client_id", c.clientID)
	q.Set("scope", GraphDefaultScope)
	q.Set("redirect_uri", c.redirectURI)
	q.Set("state", state)
	return c.login + "/" + url.PathEscape(tenantID) + "/v2.0/adminconsent?" + q.Encode()
}

// tokenError is the token endpoint's OAuth error body.
type tokenError struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

// Redeem exchanges the sign-in's authorization code (with the PKCE
// verifier) for tokens and returns the verified id_token's identity. A
// refused code or a token that fails verification is mail.ErrSignInRefused
// (the caller's 400); an unreachable identity platform is another error.
func (c *Client) Redeem(ctx context.Context, code, codeVerifier, nonce string) (mail.SignedIn, error) {
	form := url.Values{}
	form.Set("client_id", c.clientID)
	form.Set("client_secret", c.clientSecret)
	form.Set("grant_type", "authorization_code")
	form.Set("code", code)
	form.Set("redirect_uri", c.redirectURI)
	form.Set("code_verifier", codeVerifier)
	form.Set("scope", "openid profile")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.login+"/organizations/oauth2/v2.0/token", strings.NewReader(form.Encode()))
	if err != nil {
		return mail.SignedIn{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return mail.SignedIn{}, fmt.Errorf("entra: token request: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse))
	if err != nil {
		return mail.SignedIn{}, fmt.Errorf("entra: token response: %w", err)
	}
	if resp.StatusCode >= 500 {
		return mail.SignedIn{}, fmt.Errorf("entra: token endpoint answered %d", resp.StatusCode)
	}
	if resp.StatusCode != http.StatusOK {
		var te tokenError
		_ = json.Unmarshal(body, &te)
		return mail.SignedIn{}, fmt.Errorf("%w: the code was not accepted (%s: %s)", mail.ErrSignInRefused, clip(te.Error, 100), clip(te.Description, 300))
	}
	var tok struct {
		IDToken string `json:"id_token"`
	}
	if err := json.Unmarshal(body, &tok); err != nil || tok.IDToken == "" {
		return mail.SignedIn{}, fmt.Errorf("%w: the token endpoint answered no id_token", mail.ErrSignInRefused)
	}
	return c.Verify(ctx, tok.IDToken, nonce)
}

// idClaims are the id_token claims the connection needs.
type idClaims struct {
	jwt.RegisteredClaims
	TenantID          string `json:"tid"`
	Nonce             string `json:"nonce"`
	PreferredUsername string `json:"preferred_username"`
	Name              string `json:"name"`
}

// Verify checks an id_token: RS256 signature by a key of the identity
// platform's key set, audience the app's client id, exp/nbf/iat within the
// skew, issuer LoginURL/{tid}/v2.0 for its own tid, and the nonce.
func (c *Client) Verify(ctx context.Context, raw, nonce string) (mail.SignedIn, error) {
	refused := func(format string, args ...any) (mail.SignedIn, error) {
		return mail.SignedIn{}, fmt.Errorf("%w: "+format, append([]any{mail.ErrSignInRefused}, args...)...)
	}
	var claims idClaims
	var keyErr error
	_, err := jwt.ParseWithClaims(raw, &claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		k, err := c.keys.key(ctx, kid)
		if err != nil {
			keyErr = err
		}
		return k, err
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithAudience(c.clientID), jwt.WithLeeway(c.skew),
		jwt.WithTimeFunc(c.now), jwt.WithIssuedAt(), jwt.WithExpirationRequired())
	if keyErr != nil && !errors.Is(keyErr, errUnknownKey) {
		return mail.SignedIn{}, fmt.Errorf("entra: signing keys: %w", keyErr)
	}
	if err != nil {
		return refused("the id_token is not valid (%s)", clip(err.Error(), 200))
	}
	tid := strings.ToLower(claims.TenantID)
	if !guidPattern.MatchString(tid) {
		return refused("the id_token names no tenant")
	}
	if want := c.login + "/" + tid + "/v2.0"; claims.Issuer != want {
		return refused("the id_token's issuer is not the identity platform of its tenant")
	}
	if nonce == "" || claims.Nonce != nonce {
		return refused("the id_token's nonce is not the sign-in's")
	}
	who := claims.PreferredUsername
	if who == "" {
		who = claims.Name
	}
	return mail.SignedIn{TenantID: tid, Username: clip(who, 320)}, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n]
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
