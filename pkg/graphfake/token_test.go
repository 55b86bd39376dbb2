package graphfake

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestTokenEndpoint(t *testing.T) {
	tests := []struct {
		name       string
		tenant     string
		form       func(url.Values)
		wantStatus int
		wantError  string
	}{
		{name: "valid credentials", tenant: tenantA, wantStatus: http.StatusOK},
		{name: "wrong secret", tenant: tenantA, form: func(f url.Values) { f.Set("client_secret", "nope") },
			wantStatus: http.StatusUnauthorized, wantError: "invalid_client"},
		{name: "missing secret", tenant: tenantA, form: func(f url.Values) { f.Del("client_secret") },
			wantStatus: http.StatusUnauthorized, wantError: "invalid_client"},
		{name: "unknown client id", tenant: tenantA, form: func(f url.Values) { f.Set("client_id", "someone-else") },
			wantStatus: http.StatusBadRequest, wantError: "unauthorized_client"},
		{name: "delegated scope", tenant: tenantA, form: func(f url.Values) { f.Set("scope", "Mail.Read") },
			wantStatus: http.StatusBadRequest, wantError: "invalid_scope"},
		{name: "other grant", tenant: tenantA, form: func(f url.Values) { f.Set("grant_type", "password") },
			wantStatus: http.StatusBadRequest, wantError: "unsupported_grant_type"},
		{name: "no grant", tenant: tenantA, form: func(f url.Values) { f.Del("grant_type") },
			wantStatus: http.StatusBadRequest, wantError: "invalid_request"},
		{name: "unknown tenant", tenant: "not-a-customer", wantStatus: http.StatusBadRequest, wantError: "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.Tenants = []string{tenantA} })
			form := goodForm()
			if tt.form != nil {
				tt.form(form)
			}
			status, out := e.tokenRequest(tt.tenant, form)
			if status != tt.wantStatus {
				t.Fatalf("status %d, want %d: %v", status, tt.wantStatus, out)
			}
			if tt.wantError != "" {
				if out["error"] != tt.wantError {
					t.Errorf("error %v, want %s", out["error"], tt.wantError)
				}
				if d, _ := out["error_description"].(string); !strings.HasPrefix(d, "AADSTS") || strings.Contains(d, testClientSecret) {
					t.Errorf("error_description %q: want an AADSTS code and no secret", d)
				}
				return
			}
			if out["token_type"] != "Bearer" || out["expires_in"] != float64(3599) || out["access_token"] == "" {
				t.Errorf("token reply %v", out)
			}
			if got := e.fake.TokenRequests(tt.tenant); got != 1 {
				t.Errorf("TokenRequests = %d, want 1", got)
			}
		})
	}
}

func TestTokenEndpointAcceptsBasicClientAuth(t *testing.T) {
	e := newEnv(t)
	form := goodForm()
	form.Del("client_id")
	form.Del("client_secret")
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/"+tenantA+"/oauth2/v2.0/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(testClientID), url.QueryEscape(testClientSecret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func TestBearerToken(t *testing.T) {
	tests := []struct {
		name        string
		auth        func(e *env) string
		wantStatus  int
		wantMessage string
	}{
		{name: "valid", auth: func(e *env) string { return "Bearer " + e.token(tenantA) }, wantStatus: http.StatusOK},
		{name: "scheme is case-insensitive", auth: func(e *env) string { return "bearer " + e.token(tenantA) }, wantStatus: http.StatusOK},
		{name: "none", auth: func(*env) string { return "" }, wantStatus: http.StatusUnauthorized, wantMessage: "empty"},
		{name: "not issued", auth: func(*env) string { return "Bearer fake.0000" }, wantStatus: http.StatusUnauthorized, wantMessage: "validation failure"},
		{name: "basic", auth: func(*env) string { return "Basic dXNlcjpwdw==" }, wantStatus: http.StatusUnauthorized, wantMessage: "empty"},
		{name: "expired by the clock", auth: func(e *env) string {
			tok := e.token(tenantA)
			e.clock.Advance(TokenLifetime)
			return "Bearer " + tok
		}, wantStatus: http.StatusUnauthorized, wantMessage: "expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/v1.0/subscriptions", nil)
			if a := tt.auth(e); a != "" {
				req.Header.Set("Authorization", a)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if tt.wantStatus == http.StatusOK {
				return
			}
			var ge graphError
			if err := json.NewDecoder(resp.Body).Decode(&ge); err != nil {
				t.Fatal(err)
			}
			if ge.Error.Code != "InvalidAuthenticationToken" || !strings.Contains(ge.Error.Message, tt.wantMessage) {
				t.Errorf("error %+v, want InvalidAuthenticationToken mentioning %q", ge.Error, tt.wantMessage)
			}
			if ge.Error.InnerError.RequestID == "" || ge.Error.InnerError.RequestID != resp.Header.Get("request-id") {
				t.Errorf("innerError request-id %q, header %q", ge.Error.InnerError.RequestID, resp.Header.Get("request-id"))
			}
		})
	}
}

func TestTokensAreBoundToTheirTenant(t *testing.T) {
	e := newEnv(t)
	tokA, tokB := e.token(tenantA), e.token(tenantB)
	sub := e.create(tokA, e.newSub("agent@contoso.example", "inbox-id"))
	if sub.TenantID != tenantA {
		t.Errorf("tenantId %q, want %q", sub.TenantID, tenantA)
	}
	if r := e.call(http.MethodGet, "/subscriptions/"+sub.ID, tokB, nil); r.status != http.StatusNotFound {
		t.Errorf("other tenant's GET: %d, want 404", r.status)
	}
	if r := e.call(http.MethodDelete, "/subscriptions/"+sub.ID, tokB, nil); r.status != http.StatusNotFound {
		t.Errorf("other tenant's DELETE: %d, want 404", r.status)
	}
	var list listJSON
	r := e.call(http.MethodGet, "/subscriptions", tokB, nil)
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Value) != 0 {
		t.Errorf("other tenant's list: %s", r.body)
	}
	if got := e.fake.TokenRequests(tenantA) + e.fake.TokenRequests(tenantB); got != 2 {
		t.Errorf("token requests %d, want 2", got)
	}
}
