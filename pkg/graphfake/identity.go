package graphfake

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"html/template"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"supportplatform.dev/pkg/randid"
)

// The identity platform part of the fake (login.microsoftonline.com): the OpenID Connect sign-in
// (authorize and the authorization_code grant of the token endpoint), the signing keys, and admin
// consent. It knows users, each in one tenant. A consent given here is what lets the
// client_credentials grant issue app-only tokens for the tenant when Options.RequireConsent is set,
// and mailboxes assigned to a tenant are readable only with that tenant's tokens.

// User is an account of the fake identity platform.
type User struct {
	// Username is the sign-in name (login_hint, preferred_username).
	Username string `json:"username"`
	Name     string `json:"name,omitempty"`
	// TenantID is the user's Entra tenant (a GUID).
	TenantID string `json:"tenantId"`
	// DeclineSignIn and DeclineConsent make the auto-approving pages answer access_denied, as a user
	// pressing Cancel does.
	DeclineSignIn  bool `json:"declineSignIn,omitempty"`
	DeclineConsent bool `json:"declineConsent,omitempty"`
}

// CodeLifetime is how long an authorization code can be redeemed (Entra: about ten minutes).
const CodeLifetime = 10 * time.Minute

// IDTokenLifetime is the id_token's lifetime.
const IDTokenLifetime = time.Hour

type authCode struct {
	clientID, redirectURI string
	challenge, method     string
	nonce                 string
	user                  User
	expires               time.Time
}

// identity is the identity platform's state; its own lock, never held with Server.mu taken after it.
type identity struct {
	keyOnce sync.Once
	key     *rsa.PrivateKey
	kid     string

	mu             sync.Mutex
	users          map[string]User // by lower-case username
	codes          map[string]authCode
	consented      map[string]bool   // tenants
	mailboxes      map[string]string // tenant by lower-case address
	autoApprove    bool
	requireConsent bool
	redirectURIs   []string
}

func newIdentity(o Options) *identity {
	return &identity{users: map[string]User{}, codes: map[string]authCode{}, consented: map[string]bool{},
		mailboxes: map[string]string{}, requireConsent: o.RequireConsent, redirectURIs: slices.Clone(o.RedirectURIs)}
}

func (id *identity) signingKey() (*rsa.PrivateKey, string) {
	id.keyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(fmt.Sprintf("graphfake: RSA key: %v", err)) // crypto/rand does not fail
		}
		id.key, id.kid = k, randid.Hex(10)
	})
	return id.key, id.kid
}

// AddUser adds (or replaces) a user of the identity platform.
func (s *Server) AddUser(u User) {
	s.id.mu.Lock()
	defer s.id.mu.Unlock()
	u.TenantID = strings.ToLower(u.TenantID)
	s.id.users[strings.ToLower(u.Username)] = u
}

// SetAutoApprove makes the sign-in page sign in the user named by login_hint, and the consent page
// consent as a user of the tenant, without showing a page (for tests). Users' Decline flags
// still apply.
func (s *Server) SetAutoApprove(on bool) {
	s.id.mu.Lock()
	defer s.id.mu.Unlock()
	s.id.autoApprove = on
}

// GrantConsent records admin consent for tenant, as the consent page does (a setup path).
func (s *Server) GrantConsent(tenant string) {
	s.id.mu.Lock()
	defer s.id.mu.Unlock()
	s.id.consented[strings.ToLower(tenant)] = true
}

// RevokeConsent removes the app from tenant: no more app-only tokens (when consent is required).
func (s *Server) RevokeConsent(tenant string) {
	s.id.mu.Lock()
	s.id.consented[strings.ToLower(tenant)] = false
	s.id.mu.Unlock()
	s.RevokeTokens(tenant)
}

// Consented reports whether an admin consented to the app in tenant.
func (s *Server) Consented(tenant string) bool {
	s.id.mu.Lock()
	defer s.id.mu.Unlock()
	return s.id.consented[strings.ToLower(tenant)]
}

// AssignMailbox makes address a mailbox of tenant: Graph calls naming it with another tenant's
// token answer 404 ErrorInvalidUser, as the mailbox does not exist in that directory. Mailboxes
// never assigned are reachable from every tenant.
func (s *Server) AssignMailbox(tenant, address string) {
	s.id.mu.Lock()
	defer s.id.mu.Unlock()
	s.id.mailboxes[strings.ToLower(address)] = strings.ToLower(tenant)
}

// mailboxInTenant reports whether a token of tenant may name the mailbox address.
func (s *Server) mailboxInTenant(tenant, address string) bool {
	s.id.mu.Lock()
	defer s.id.mu.Unlock()
	owner, ok := s.id.mailboxes[strings.ToLower(address)]
	return !ok || owner == strings.ToLower(tenant)
}

// appTokenRefused reports whether the client_credentials grant must refuse tenant: consent is
// required and no admin of the tenant gave it.
func (s *Server) appTokenRefused(tenant string) bool {
	s.id.mu.Lock()
	defer s.id.mu.Unlock()
	return s.id.requireConsent && !s.id.consented[strings.ToLower(tenant)]
}

func (s *Server) redirectAllowed(uri string) bool {
	u, err := url.Parse(uri)
	if uri == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" {
		return false
	}
	s.id.mu.Lock()
	defer s.id.mu.Unlock()
	return len(s.id.redirectURIs) == 0 || slices.Contains(s.id.redirectURIs, uri)
}

// errorPage is what the identity platform shows instead of redirecting when the client or the
// redirect URI is wrong (it cannot trust the redirect URI).
func errorPage(w http.ResponseWriter, status, aadsts int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = pageTemplate.ExecuteTemplate(w, "error", map[string]any{"Code": aadsts, "Message": msg})
}

// redirectWith sends the browser back to uri with the query values added.
func redirectWith(w http.ResponseWriter, r *http.Request, uri string, v url.Values) {
	u, _ := url.Parse(uri) // checked by redirectAllowed
	q := u.Query()
	for k, vs := range v {
		q[k] = vs
	}
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func declined(state string) url.Values {
	v := url.Values{}
	v.Set("error", "access_denied")
	v.Set("error_description", "AADSTS65004: User declined to consent to access the app.")
	if state != "" {
		v.Set("state", state)
	}
	return v
}

// appRequest reads the parameters of a page the browser is sent to (authorize, adminconsent) and
// checks the app and its redirect URI as the identity platform does before it redirects anywhere:
// an unknown app or redirect URI gets an error page, never a redirect. ok is false when it answered.
func (s *Server) appRequest(w http.ResponseWriter, r *http.Request) (p url.Values, redirect string, ok bool) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		errorPage(w, http.StatusBadRequest, 900144, "The request is malformed.")
		return nil, "", false
	}
	p = r.Form
	if p.Get("client_id") != s.clientID || s.clientID == "" {
		errorPage(w, http.StatusBadRequest, 700016, "Application with identifier '"+p.Get("client_id")+"' was not found in the directory.")
		return nil, "", false
	}
	redirect = p.Get("redirect_uri")
	if !s.redirectAllowed(redirect) {
		errorPage(w, http.StatusBadRequest, 50011, "The redirect URI '"+redirect+"' specified in the request does not match the redirect URIs configured for the application.")
		return nil, "", false
	}
	return p, redirect, true
}

// handleAuthorize is GET (the page, or an auto-approved sign-in) and POST (the page's form) of
// /{tenant}/oauth2/v2.0/authorize.
func (s *Server) handleAuthorize(w http.ResponseWriter, r *http.Request) {
	p, redirect, ok := s.appRequest(w, r)
	if !ok {
		return
	}
	state := p.Get("state")
	fail := func(code, desc string) {
		v := url.Values{}
		v.Set("error", code)
		v.Set("error_description", desc)
		if state != "" {
			v.Set("state", state)
		}
		redirectWith(w, r, redirect, v)
	}
	switch {
	case p.Get("response_type") != "code":
		fail("unsupported_response_type", "AADSTS700054: response_type '"+p.Get("response_type")+"' is not enabled for the application.")
		return
	case p.Get("response_mode") != "" && p.Get("response_mode") != "query":
		fail("invalid_request", "AADSTS900144: this fake answers response_mode=query only.")
		return
	case !slices.Contains(strings.Fields(p.Get("scope")), "openid"):
		fail("invalid_request", "AADSTS900144: The request body must contain the following parameter: 'scope' with openid.")
		return
	case p.Get("code_challenge") != "" && p.Get("code_challenge_method") != "S256":
		fail("invalid_request", "AADSTS501491: Invalid code_challenge_method: this fake accepts S256 only.")
		return
	}
	tenant := strings.ToLower(r.PathValue("tenant"))

	s.id.mu.Lock()
	auto := s.id.autoApprove
	hinted, hintKnown := s.id.users[strings.ToLower(p.Get("login_hint"))]
	users := make([]User, 0, len(s.id.users))
	for _, u := range s.id.users {
		if tenant == "organizations" || tenant == "common" || u.TenantID == tenant {
			users = append(users, u)
		}
	}
	s.id.mu.Unlock()
	slices.SortFunc(users, func(a, b User) int { return strings.Compare(a.Username, b.Username) })

	var user User
	switch {
	case r.Method == http.MethodPost && p.Get("action") == "cancel":
		redirectWith(w, r, redirect, declined(state))
		return
	case r.Method == http.MethodPost:
		s.id.mu.Lock()
		u, ok := s.id.users[strings.ToLower(p.Get("username"))]
		s.id.mu.Unlock()
		if !ok || (tenant != "organizations" && tenant != "common" && u.TenantID != tenant) {
			s.page(w, "signin", p, users, "AADSTS50034: The user account does not exist in the directory.")
			return
		}
		user = u
	case auto && hintKnown:
		if hinted.DeclineSignIn {
			redirectWith(w, r, redirect, declined(state))
			return
		}
		user = hinted
	default:
		s.page(w, "signin", p, users, "")
		return
	}
	code := "fakecode." + randid.Hex(40)
	s.id.mu.Lock()
	now := s.now()
	for k, c := range s.id.codes {
		if !c.expires.After(now) {
			delete(s.id.codes, k)
		}
	}
	s.id.codes[code] = authCode{clientID: s.clientID, redirectURI: redirect, challenge: p.Get("code_challenge"),
		method: p.Get("code_challenge_method"), nonce: p.Get("nonce"), user: user, expires: now.Add(CodeLifetime)}
	s.id.mu.Unlock()
	v := url.Values{}
	v.Set("code", code)
	if state != "" {
		v.Set("state", state)
	}
	v.Set("session_state", newGUID())
	redirectWith(w, r, redirect, v)
}

// handleAdminConsent is GET and POST of /{tenant}/v2.0/adminconsent.
func (s *Server) handleAdminConsent(w http.ResponseWriter, r *http.Request) {
	p, redirect, ok := s.appRequest(w, r)
	if !ok {
		return
	}
	state := p.Get("state")
	tenant := strings.ToLower(r.PathValue("tenant"))
	if p.Get("scope") != GraphScope {
		v := url.Values{}
		v.Set("error", "invalid_request")
		v.Set("error_description", "AADSTS70011: The provided value for the input parameter 'scope' is not valid; admin consent asks for "+GraphScope+".")
		v.Set("state", state)
		redirectWith(w, r, redirect, v)
		return
	}
	s.id.mu.Lock()
	auto := s.id.autoApprove
	var admins []User
	for _, u := range s.id.users {
		if u.TenantID == tenant {
			admins = append(admins, u)
		}
	}
	s.id.mu.Unlock()
	if len(admins) == 0 {
		errorPage(w, http.StatusBadRequest, 90002, "Tenant '"+tenant+"' not found.")
		return
	}
	slices.SortFunc(admins, func(a, b User) int { return strings.Compare(a.Username, b.Username) })
	switch {
	case r.Method == http.MethodPost && p.Get("action") == "cancel":
		redirectWith(w, r, redirect, declined(state))
		return
	case r.Method == http.MethodPost:
	case auto && admins[0].DeclineConsent:
		redirectWith(w, r, redirect, declined(state))
		return
	case auto:
	default:
		s.page(w, "consent", p, admins, "")
		return
	}
	s.GrantConsent(tenant)
	v := url.Values{}
	v.Set("admin_consent", "True")
	v.Set("tenant", tenant)
	v.Set("scope", GraphScope)
	v.Set("state", state)
	redirectWith(w, r, redirect, v)
}

// handleKeys serves the signing keys (JWKS) at /discovery/v2.0/keys and /{tenant}/discovery/v2.0/keys.
func (s *Server) handleKeys(w http.ResponseWriter, _ *http.Request) {
	k, kid := s.id.signingKey()
	b64 := base64.RawURLEncoding.EncodeToString
	writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]any{{
		"kty": "RSA", "use": "sig", "kid": kid, "x5t": kid,
		"n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes()),
	}}})
}

// redeemCode is the token endpoint's authorization_code grant.
func (s *Server) redeemCode(w http.ResponseWriter, r *http.Request, form url.Values, fail func(status int, code string, aadsts int, desc string)) {
	id, secret := form.Get("client_id"), form.Get("client_secret")
	if u, p, ok := r.BasicAuth(); ok {
		id, _ = url.QueryUnescape(u)
		secret, _ = url.QueryUnescape(p)
	}
	if id == "" || s.clientID == "" || id != s.clientID {
		fail(http.StatusBadRequest, "unauthorized_client", 700016, "Application with identifier '"+id+"' was not found in the directory.")
		return
	}
	if secret == "" {
		fail(http.StatusUnauthorized, "invalid_client", 7000218, "The request body must contain the following parameter: 'client_assertion' or 'client_secret'.")
		return
	}
	if s.clientSecret == "" || subtle.ConstantTimeCompare([]byte(secret), []byte(s.clientSecret)) != 1 {
		fail(http.StatusUnauthorized, "invalid_client", 7000215, "Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID.")
		return
	}
	code := form.Get("code")
	s.id.mu.Lock()
	c, ok := s.id.codes[code]
	delete(s.id.codes, code) // single use, whatever follows
	s.id.mu.Unlock()
	now := s.now()
	switch {
	case code == "":
		fail(http.StatusBadRequest, "invalid_request", 900144, "The request body must contain the following parameter: 'code'.")
		return
	case !ok:
		fail(http.StatusBadRequest, "invalid_grant", 54005, "OAuth2 Authorization code was already redeemed, please retry with a new valid code or use an existing refresh token.")
		return
	case !c.expires.After(now):
		fail(http.StatusBadRequest, "invalid_grant", 70008, "The provided authorization code or refresh token has expired due to inactivity.")
		return
	case form.Get("redirect_uri") != c.redirectURI:
		fail(http.StatusBadRequest, "invalid_grant", 500112, "The reply address '"+form.Get("redirect_uri")+"' does not match the reply address '"+c.redirectURI+"' provided when requesting Authorization code.")
		return
	}
	if c.challenge != "" {
		sum := sha256.Sum256([]byte(form.Get("code_verifier")))
		if subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(c.challenge)) != 1 {
			fail(http.StatusBadRequest, "invalid_grant", 501481, "The Code_Verifier does not match the code_challenge supplied in the authorization request.")
			return
		}
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	k, kid := s.id.signingKey()
	name := c.user.Name
	if name == "" {
		name = c.user.Username
	}
	claims := jwt.MapClaims{
		"ver": "2.0", "iss": scheme + "://" + r.Host + "/" + c.user.TenantID + "/v2.0", "aud": c.clientID,
		"sub": randid.Hex(16), "oid": newGUID(), "tid": c.user.TenantID, "preferred_username": c.user.Username,
		"name": name, "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(IDTokenLifetime).Unix(),
	}
	if c.nonce != "" {
		claims["nonce"] = c.nonce
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = kid
	signed, err := tok.SignedString(k)
	if err != nil {
		fail(http.StatusInternalServerError, "server_error", 90000, "signing failed")
		return
	}
	w.Header().Set("Cache-Control", "no-store, no-cache")
	writeJSON(w, http.StatusOK, map[string]any{
		"token_type": "Bearer", "scope": "openid profile", "expires_in": int(IDTokenLifetime / time.Second),
		"access_token": "fake.user." + randid.Hex(32), "id_token": signed,
	})
}

// page renders the sign-in or consent page with every parameter carried in hidden fields.
func (s *Server) page(w http.ResponseWriter, name string, p url.Values, users []User, problem string) {
	hidden := map[string]string{}
	for k := range p {
		if k != "username" && k != "action" {
			hidden[k] = p.Get(k)
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if problem != "" {
		w.WriteHeader(http.StatusBadRequest)
	}
	_ = pageTemplate.ExecuteTemplate(w, name, map[string]any{"Hidden": hidden, "Users": users, "Problem": problem,
		"Hint": p.Get("login_hint"), "ClientID": s.clientID})
}

var pageTemplate = template.Must(template.New("pages").Parse(`
{{define "head"}}<!doctype html><html><head><meta charset="utf-8"><title>Fake Microsoft identity platform</title></head><body>{{end}}
{{define "error"}}{{template "head"}}<h1>Sign in failed</h1><p>AADSTS{{.Code}}: {{.Message}}</p></body></html>{{end}}
{{define "signin"}}{{template "head"}}<h1>Sign in (fake Microsoft identity platform)</h1>
{{if .Problem}}<p><strong>{{.Problem}}</strong></p>{{end}}
<form method="post">{{range $k, $v := .Hidden}}<input type="hidden" name="{{$k}}" value="{{$v}}">{{end}}
<label>Account <input name="username" value="{{.Hint}}" list="users"></label>
<datalist id="users">{{range .Users}}<option value="{{.Username}}">{{.TenantID}}</option>{{end}}</datalist>
<button name="action" value="signin">Sign in</button> <button name="action" value="cancel">Cancel</button></form>
<ul>{{range .Users}}<li>{{.Username}} (tenant {{.TenantID}})</li>{{end}}</ul></body></html>{{end}}
{{define "consent"}}{{template "head"}}<h1>Permissions requested</h1>
<p>The app {{.ClientID}} asks for its application permissions on Microsoft Graph in your organisation
(signed in as {{with index .Users 0}}{{.Username}}, tenant {{.TenantID}}{{end}}): read and send mail of the mailboxes it is given.</p>
<form method="post">{{range $k, $v := .Hidden}}<input type="hidden" name="{{$k}}" value="{{$v}}">{{end}}
<button name="action" value="accept">Accept</button> <button name="action" value="cancel">Cancel</button></form></body></html>{{end}}
`))
