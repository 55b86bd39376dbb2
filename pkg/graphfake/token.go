package graphfake

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"supportplatform.dev/pkg/randid"
)

// GraphScope is the only scope the token endpoint grants: client credentials flows ask for a
// resource's ".default" scope.
const GraphScope = "https://graph.microsoft.com/.default"

// TokenLifetime is the expires_in the token endpoint answers, as Entra does for app tokens.
const TokenLifetime = 3599 * time.Second

type accessToken struct {
	tenant  string
	appID   string
	expires time.Time
}

// entraError is the token endpoint's error shape, which is OAuth's, not Graph's.
type entraError struct {
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
	ErrorCodes       []int  `json:"error_codes"`
	Timestamp        string `json:"timestamp"`
	TraceID          string `json:"trace_id"`
	CorrelationID    string `json:"correlation_id"`
	ErrorURI         string `json:"error_uri"`
}

func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	tenant := r.PathValue("tenant")
	s.mu.Lock()
	s.tokenRequests[tenant]++
	s.mu.Unlock()

	fail := func(status int, code string, aadsts int, desc string) {
		now := s.now().UTC()
		trace := newGUID()
		writeJSON(w, status, entraError{
			Error:            code,
			ErrorDescription: fmt.Sprintf("AADSTS%d: %s Trace ID: %s Correlation ID: %s Timestamp: %s", aadsts, desc, trace, trace, now.Format("2006-01-02 15:04:05Z")),
			ErrorCodes:       []int{aadsts},
			Timestamp:        now.Format("2006-01-02 15:04:05Z"),
			TraceID:          trace,
			CorrelationID:    trace,
			ErrorURI:         fmt.Sprintf("https://login.microsoftonline.com/error?code=%d", aadsts),
		})
	}

	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		fail(http.StatusBadRequest, "invalid_request", 900144, "The request body must be application/x-www-form-urlencoded.")
		return
	}
	form := r.PostForm
	if form.Get("grant_type") == "authorization_code" {
		s.redeemCode(w, r, form, fail)
		return
	}
	switch gt := form.Get("grant_type"); {
	case gt == "":
		fail(http.StatusBadRequest, "invalid_request", 900144, "The request body must contain the following parameter: 'grant_type'.")
		return
	case gt != "client_credentials":
		fail(http.StatusBadRequest, "unsupported_grant_type", 70003, "The app requested an unsupported grant type '"+gt+"'.")
		return
	}
	if s.tenants != nil && !s.tenants[strings.ToLower(tenant)] {
		fail(http.StatusBadRequest, "invalid_request", 90002, "Tenant '"+tenant+"' not found.")
		return
	}

	// Entra accepts the client's credentials in the form (client_secret_post) or as HTTP Basic
	// (client_secret_basic, each part form-encoded).
	id, secret := form.Get("client_id"), form.Get("client_secret")
	if u, p, ok := r.BasicAuth(); ok {
		id, _ = url.QueryUnescape(u)
		secret, _ = url.QueryUnescape(p)
	}
	if id == "" || s.clientID == "" || id != s.clientID {
		fail(http.StatusBadRequest, "unauthorized_client", 700016, "Application with identifier '"+id+"' was not found in the directory '"+tenant+"'.")
		return
	}
	if scope := form.Get("scope"); scope != GraphScope {
		fail(http.StatusBadRequest, "invalid_scope", 1002012, "The provided value for scope '"+scope+"' is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI).")
		return
	}
	if secret == "" {
		fail(http.StatusUnauthorized, "invalid_client", 7000216, "'client_assertion', 'client_secret' or 'request' is required for the 'client_credentials' grant type.")
		return
	}
	if s.clientSecret == "" || subtle.ConstantTimeCompare([]byte(secret), []byte(s.clientSecret)) != 1 {
		fail(http.StatusUnauthorized, "invalid_client", 7000215, "Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID.")
		return
	}
	if s.appTokenRefused(tenant) {
		fail(http.StatusBadRequest, "unauthorized_client", 700016, "Application with identifier '"+id+"' was not found in the directory '"+tenant+"'. This can happen if the application has not been installed by the administrator of the tenant or consented to by any user in the tenant. You may have sent your authentication request to the wrong tenant.")
		return
	}

	tok := "fake." + randid.Hex(32)
	now := s.now()
	s.mu.Lock()
	for k, t := range s.tokens {
		if !t.expires.After(now) {
			delete(s.tokens, k)
		}
	}
	s.tokens[tok] = accessToken{tenant: tenant, appID: id, expires: now.Add(TokenLifetime)}
	s.mu.Unlock()

	w.Header().Set("Cache-Control", "no-store, no-cache")
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, map[string]any{
		"token_type":     "Bearer",
		"expires_in":     int(TokenLifetime / time.Second),
		"ext_expires_in": int(TokenLifetime / time.Second),
		"access_token":   tok,
	})
}

// authorize checks the bearer token of a Graph call and answers 401 as Graph does when it fails.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) (accessToken, bool) {
	deny := func(msg string) (accessToken, bool) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="", authorization_uri="https://login.microsoftonline.com/common/oauth2/authorize", client_id="00000003-0000-0000-c000-000000000000"`)
		writeError(w, http.StatusUnauthorized, "InvalidAuthenticationToken", msg)
		return accessToken{}, false
	}
	scheme, raw, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	raw = strings.TrimSpace(raw)
	if !strings.EqualFold(scheme, "Bearer") || raw == "" {
		return deny("Access token is empty.")
	}
	s.mu.Lock()
	tok, ok := s.tokens[raw]
	s.mu.Unlock()
	if !ok {
		return deny("Access token validation failure. Invalid audience.")
	}
	if !tok.expires.After(s.now()) {
		return deny("Lifetime validation failed, the token is expired.")
	}
	return tok, true
}
