package entra_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/services/mail/internal/entra"
	"supportplatform.dev/services/mail/internal/mail"
)

const (
	clientID    = "app-id"
	secret      = "app-secret"
	redirectURI = "https://support.example/api/ProviderConnections/callback"
	tenantA     = "11111111-1111-4111-8111-111111111111"
)

type env struct {
	fake  *graphfake.Server
	srv   *httptest.Server
	c     *entra.Client
	now   time.Time
	noRed *http.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{now: time.Now()}
	e.fake = graphfake.New(graphfake.Options{ClientID: clientID, ClientSecret: secret, RequireConsent: true,
		RedirectURIs: []string{redirectURI}})
	e.fake.AddUser(graphfake.User{Username: "admin@a.example", TenantID: tenantA})
	e.fake.SetAutoApprove(true)
	e.srv = httptest.NewServer(e.fake)
	t.Cleanup(e.srv.Close)
	var err error
	e.c, err = entra.New(entra.Config{ClientID: clientID, ClientSecret: secret, LoginURL: e.srv.URL,
		RedirectURI: redirectURI, Now: func() time.Time { return e.now }})
	if err != nil {
		t.Fatal(err)
	}
	e.noRed = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return e
}

// signIn runs the browser's part of the sign-in and returns the redirect's
// query.
func (e *env) signIn(t *testing.T, state, nonce, verifier, hint string) url.Values {
	t.Helper()
	sum := sha256.Sum256([]byte(verifier))
	u := e.c.AuthorizeURL(state, nonce, base64.RawURLEncoding.EncodeToString(sum[:]), hint)
	resp, err := e.noRed.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: %d", resp.StatusCode)
	}
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if !strings.HasPrefix(loc.String(), redirectURI+"?") {
		t.Fatalf("redirected to %s", loc)
	}
	return loc.Query()
}

func TestAuthorizeURLIsTheDocumentedRequest(t *testing.T) {
	e := newEnv(t)
	u, err := url.Parse(e.c.AuthorizeURL("st", "no", "ch", "admin@a.example"))
	if err != nil {
		t.Fatal(err)
	}
	if u.Path != "/organizations/oauth2/v2.0/authorize" {
		t.Errorf("path %s", u.Path)
	}
	q := u.Query()
	want := map[string]string{"client_id": clientID, "response_type": "code", "redirect_uri": redirectURI,
		"response_mode": "query", "scope": "openid profile", "state": "st", "nonce": "no", "code_challenge": "ch",
		"code_challenge_method": "S256", "login_hint": "admin@a.example"}
	for k, v := range want {
		if q.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, q.Get(k), v)
		}
	}
	c, _ := url.Parse(e.c.ConsentURL(tenantA, "s2"))
	if c.Path != "/"+tenantA+"/v2.0/adminconsent" || c.Query().Get("scope") != entra.GraphDefaultScope ||
		c.Query().Get("client_id") != clientID || c.Query().Get("redirect_uri") != redirectURI || c.Query().Get("state") != "s2" {
		t.Errorf("consent URL %s", c)
	}
}

func TestRedeemVerifiesTheIDToken(t *testing.T) {
	e := newEnv(t)
	q := e.signIn(t, "state-1", "nonce-1", "verifier-verifier-verifier-verifier-verifier", "admin@a.example")
	if q.Get("state") != "state-1" || q.Get("code") == "" {
		t.Fatalf("answer %v", q)
	}
	who, err := e.c.Redeem(context.Background(), q.Get("code"), "verifier-verifier-verifier-verifier-verifier", "nonce-1")
	if err != nil {
		t.Fatal(err)
	}
	if who.TenantID != tenantA || who.Username != "admin@a.example" {
		t.Errorf("signed in %+v", who)
	}
	// The code is single use.
	if _, err := e.c.Redeem(context.Background(), q.Get("code"), "verifier-verifier-verifier-verifier-verifier", "nonce-1"); !errors.Is(err, mail.ErrSignInRefused) {
		t.Errorf("second redeem: %v", err)
	}
}

func TestRedeemRefusals(t *testing.T) {
	const verifier = "verifier-verifier-verifier-verifier-verifier"
	cases := []struct {
		name             string
		verifier, nonce  string
		skewTo           time.Duration
		wantTextContains string
	}{
		{"wrong PKCE verifier", "another-verifier-another-verifier-another", "n", 0, "code_challenge"},
		{"wrong nonce", verifier, "other", 0, "nonce"},
		{"expired token", verifier, "n", 2 * time.Hour, "expired"},
		{"token from the future", verifier, "n", -time.Hour, "not valid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			q := e.signIn(t, "s", "n", verifier, "admin@a.example")
			e.now = e.now.Add(tc.skewTo)
			_, err := e.c.Redeem(context.Background(), q.Get("code"), tc.verifier, tc.nonce)
			if !errors.Is(err, mail.ErrSignInRefused) || !strings.Contains(err.Error(), tc.wantTextContains) {
				t.Fatalf("got %v, want a refusal mentioning %q", err, tc.wantTextContains)
			}
		})
	}
}

// signed makes an id_token with claims signed by key.
func signed(t *testing.T, key *rsa.PrivateKey, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// keyServer serves one RSA key as the identity platform's key set and
// counts the fetches.
func keyServer(t *testing.T, key *rsa.PrivateKey, kid string, fetches *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/organizations/discovery/v2.0/keys" {
			http.NotFound(w, r)
			return
		}
		fetches.Add(1)
		b := base64.RawURLEncoding.EncodeToString
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]any{{"kty": "RSA", "use": "sig", "kid": kid,
			"n": b(key.N.Bytes()), "e": b([]byte{1, 0, 1})}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestVerifyChecksIssuerAudienceSignatureAndKeys(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	var fetches atomic.Int32
	srv := keyServer(t, key, "k1", &fetches)
	now := time.Now()
	c, err := entra.New(entra.Config{ClientID: clientID, ClientSecret: secret, LoginURL: srv.URL, RedirectURI: redirectURI,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	base := func() jwt.MapClaims {
		return jwt.MapClaims{"iss": srv.URL + "/" + tenantA + "/v2.0", "aud": clientID, "tid": tenantA, "nonce": "n",
			"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(), "preferred_username": "x@a"}
	}
	with := func(k string, v any) jwt.MapClaims { m := base(); m[k] = v; return m }
	without := func(k string) jwt.MapClaims { m := base(); delete(m, k); return m }
	if _, err := c.Verify(context.Background(), signed(t, key, "k1", base()), "n"); err != nil {
		t.Fatalf("a good token: %v", err)
	}
	bad := map[string]string{
		"other audience":           signed(t, key, "k1", with("aud", "someone-else")),
		"issuer of another tenant": signed(t, key, "k1", with("iss", srv.URL+"/22222222-2222-4222-8222-222222222222/v2.0")),
		"real cloud's issuer":      signed(t, key, "k1", with("iss", "https://login.microsoftonline.com/"+tenantA+"/v2.0")),
		"no tenant":                signed(t, key, "k1", without("tid")),
		"no expiry":                signed(t, key, "k1", without("exp")),
		"signed by another key":    signed(t, other, "k1", base()),
		"unknown kid":              signed(t, other, "k2", base()),
	}
	for name, tok := range bad {
		if _, err := c.Verify(context.Background(), tok, "n"); !errors.Is(err, mail.ErrSignInRefused) {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, base())
	hsTok, _ := hs.SignedString([]byte("k"))
	if _, err := c.Verify(context.Background(), hsTok, "n"); !errors.Is(err, mail.ErrSignInRefused) {
		t.Errorf("HS256: %v", err)
	}
	// Unknown kids fetch the keys again at most once per refetch interval
	// (a minute): forged kids cannot make every sign-in fetch.
	for range 5 {
		_, _ = c.Verify(context.Background(), signed(t, other, "k3", base()), "n")
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("%d key fetches within a minute, want 1", n)
	}
	now = now.Add(2 * time.Minute)
	_, _ = c.Verify(context.Background(), signed(t, other, "k4", with("exp", now.Add(time.Hour).Unix())), "n")
	if n := fetches.Load(); n != 2 {
		t.Errorf("%d key fetches after the interval, want 2", n)
	}
}

func TestFakeRefusesAppTokensWithoutConsentAndOtherTenantsMailboxes(t *testing.T) {
	e := newEnv(t)
	token := func(tenant string) (int, string) {
		form := url.Values{"client_id": {clientID}, "client_secret": {secret}, "grant_type": {"client_credentials"},
			"scope": {graphfake.GraphScope}}
		resp, err := http.PostForm(e.srv.URL+"/"+tenant+"/oauth2/v2.0/token", form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		if resp.StatusCode != http.StatusOK {
			return resp.StatusCode, body["error"].(string) + " " + body["error_description"].(string)
		}
		return resp.StatusCode, body["access_token"].(string)
	}
	if status, msg := token(tenantA); status != http.StatusBadRequest || !strings.Contains(msg, "unauthorized_client") || !strings.Contains(msg, "AADSTS700016") {
		t.Fatalf("token without consent: %d %s", status, msg)
	}
	// Admin consent through the consent endpoint, as the browser does.
	resp, err := e.noRed.Get(e.c.ConsentURL(tenantA, "s"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if q := loc.Query(); q.Get("admin_consent") != "True" || q.Get("tenant") != tenantA || q.Get("state") != "s" || q.Get("scope") != graphfake.GraphScope {
		t.Fatalf("consent answer %s", loc)
	}
	status, tokA := token(tenantA)
	if status != http.StatusOK {
		t.Fatalf("token after consent: %d %s", status, tokA)
	}
	const tenantB = "22222222-2222-4222-8222-222222222222"
	e.fake.GrantConsent(tenantB)
	e.fake.AssignMailbox(tenantB, "support@b.example")
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/v1.0/users/support@b.example/mailFolders/inbox/messages/delta", nil)
	req.Header.Set("Authorization", "Bearer "+tokA)
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusNotFound {
		t.Errorf("tenant A's token on tenant B's mailbox: %d, want 404", r2.StatusCode)
	}
	_, tokB := token(tenantB)
	req.Header.Set("Authorization", "Bearer "+tokB)
	r3, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r3.Body.Close()
	if r3.StatusCode != http.StatusOK {
		t.Errorf("tenant B's token on its mailbox: %d", r3.StatusCode)
	}
}

func TestFakeDeclines(t *testing.T) {
	e := newEnv(t)
	e.fake.AddUser(graphfake.User{Username: "no@a.example", TenantID: tenantA, DeclineSignIn: true})
	q := e.signIn(t, "s", "n", "verifier-verifier-verifier-verifier-verifier", "no@a.example")
	if q.Get("error") != "access_denied" || q.Get("state") != "s" || q.Get("code") != "" {
		t.Errorf("declined sign-in answered %v", q)
	}
	// Without auto-approval the page is shown.
	e.fake.SetAutoApprove(false)
	resp, err := e.noRed.Get(e.c.AuthorizeURL("s", "n", "c", "admin@a.example"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("sign-in page: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// The page's Cancel answers access_denied with the state.
	form := url.Values{"client_id": {clientID}, "redirect_uri": {redirectURI}, "response_type": {"code"}, "scope": {"openid profile"},
		"state": {"s9"}, "action": {"cancel"}}
	resp, err = e.noRed.PostForm(e.srv.URL+"/organizations/oauth2/v2.0/authorize", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if loc.Query().Get("error") != "access_denied" || loc.Query().Get("state") != "s9" {
		t.Errorf("cancel answered %s", loc)
	}
	// A redirect URI the app did not register gets an error page, never a redirect.
	bad := strings.Replace(e.c.ConsentURL(tenantA, "s"), url.QueryEscape(redirectURI), url.QueryEscape("https://evil.example/cb"), 1)
	resp, err = e.noRed.Get(bad)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
		t.Errorf("unregistered redirect URI: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}
