package apicontract

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func load(t *testing.T) *Contract {
	t.Helper()
	c, err := Load("../../gateway/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const (
	validToken = `{"accessToken":"eyJ.x.y","tokenType":"Bearer","expiresIn":3600,"expiresAt":"2026-11-21T17:00:00Z"}`
	validMe    = `{"customer":{"customerID":1,"name":"Demo Company","createdAt":"2026-11-21T16:00:00.123Z"},` +
		`"account":{"accountID":2,"email":"demo@example.com","name":"Demo Admin","role":"admin","createdAt":"2026-11-21T16:00:00Z","available":false}}`
	problem401 = `{"type":"https://supportplatform.dev/problems/unauthorized","title":"Unauthorized","status":401,"requestId":"abc"}`
)

func TestValidateResponse(t *testing.T) {
	c := load(t)
	json := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	prob := http.Header{"Content-Type": {"application/problem+json"}}
	tests := []struct {
		name    string
		method  string
		path    string
		status  int
		header  http.Header
		body    string
		wantErr string // empty: valid
	}{
		{name: "login ok", method: "POST", path: "/api/Auth/login", status: 200, header: json, body: validToken},
		{name: "login ok odd case", method: "POST", path: "/API/auth/LOGIN", status: 200, header: json, body: validToken},
		{name: "token type lower case", method: "POST", path: "/api/Auth/login", status: 200, header: json,
			body: strings.Replace(validToken, `"Bearer"`, `"bearer"`, 1), wantErr: "doesn't match"},
		{name: "undocumented field", method: "POST", path: "/api/Auth/login", status: 200, header: json,
			body: strings.Replace(validToken, `{`, `{"refreshToken":"r",`, 1), wantErr: "doesn't match"},
		{name: "expiresAt not a date-time", method: "POST", path: "/api/Auth/login", status: 200, header: json,
			body: strings.Replace(validToken, "2026-11-21T17:00:00Z", "tomorrow", 1), wantErr: "doesn't match"},
		{name: "undocumented status", method: "POST", path: "/api/Auth/login", status: 500, header: prob,
			body: `{"type":"x","title":"Internal","status":500}`, wantErr: "status is not supported"},
		{name: "undocumented path", method: "GET", path: "/api/Unknown", status: 200, header: json, body: `{}`, wantErr: "not documented"},
		{name: "undocumented method", method: "DELETE", path: "/api/Auth/login", status: 204, wantErr: "not documented"},
		{name: "problem 401", method: "POST", path: "/api/auth/login", status: 401, header: prob, body: problem401},
		{name: "401 as plain json", method: "POST", path: "/api/Auth/login", status: 401, header: json, body: problem401, wantErr: "Content-Type"},
		{name: "problem status differs", method: "GET", path: "/api/Customers/me", status: 401, header: prob,
			body: strings.Replace(problem401, "401", "400", 1), wantErr: "differs"},
		{name: "problem without title", method: "GET", path: "/api/Customers/me", status: 401, header: prob,
			body: `{"type":"x","status":401}`, wantErr: "doesn't match"},
		{name: "logout 204", method: "POST", path: "/api/Auth/logout", status: 204},
		{name: "logout 204 with a body", method: "POST", path: "/api/Auth/logout", status: 204, header: json, body: `{"ok":true}`, wantErr: "without a body"},
		{name: "me", method: "GET", path: "/api/customers/me", status: 200, header: json, body: validMe},
		{name: "me unknown role", method: "GET", path: "/api/Customers/me", status: 200, header: json,
			body: strings.Replace(validMe, `"admin"`, `"owner"`, 1), wantErr: "doesn't match"},
		{name: "me customer id as string", method: "GET", path: "/api/Customers/me", status: 200, header: json,
			body: strings.Replace(validMe, `"customerID":1`, `"customerID":"1"`, 1), wantErr: "doesn't match"},
		// The gateway's own 429 is a problem too (problemjson plugin); bare text is a violation.
		{name: "plain-text 429", method: "GET", path: "/api/Customers/me", status: 429,
			header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}, "Retry-After": {"60"}}, body: "Too Many Requests", wantErr: "Content-Type"},
		{name: "gateway 429 problem", method: "GET", path: "/api/Customers/me", status: 429,
			header: http.Header{"Content-Type": {"application/problem+json"}, "Retry-After": {"60"}},
			body:   `{"type":"https://supportplatform.dev/problems/rate_limited","title":"Too Many Requests","status":429}`},
		{name: "429 without Retry-After", method: "GET", path: "/api/Customers/me", status: 429,
			header: http.Header{"Content-Type": {"application/problem+json"}}, body: `{"type":"x","title":"Too Many Requests","status":429}`, wantErr: "Retry-After"},
		{name: "service 429 problem", method: "POST", path: "/api/Auth/login", status: 429,
			header: http.Header{"Content-Type": {"application/problem+json"}, "Retry-After": {"30"}},
			body:   `{"type":"x","title":"Too Many Requests","status":429}`},
		{name: "jwks", method: "GET", path: "/.WELL-KNOWN/jwks.json", status: 200, header: json,
			body: `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k1","alg":"EdDSA","use":"sig","x":"abc"}]}`},
		{name: "jwks empty", method: "GET", path: "/api/Auth/jwks", status: 200, header: json, body: `{"keys":[]}`, wantErr: "doesn't match"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "https://localhost:8443"+tc.path, nil)
			h := tc.header
			if h == nil {
				h = http.Header{}
			}
			err := c.ValidateResponse(req, tc.status, h, []byte(tc.body))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Errorf("accepted, want an error containing %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Errorf("error %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestValidateProblem(t *testing.T) {
	c := load(t)
	prob := http.Header{"Content-Type": {"application/problem+json"}}
	ok := `{"type":"https://supportplatform.dev/problems/https-required","title":"HTTPS required","status":403,"detail":"d","instance":"/","requestId":"r"}`
	if err := c.ValidateProblem(403, prob, []byte(ok)); err != nil {
		t.Errorf("valid problem: %v", err)
	}
	for name, tc := range map[string]struct {
		status int
		header http.Header
		body   string
	}{
		"text/plain":          {403, http.Header{"Content-Type": {"text/plain"}}, ok},
		"not json":            {403, prob, "HTTPS required"},
		"status mismatch":     {400, prob, ok},
		"errors not strings":  {403, prob, strings.Replace(ok, `"requestId":"r"`, `"errors":{"email":1}`, 1)},
		"status not a number": {403, prob, strings.Replace(ok, `"status":403`, `"status":"403"`, 1)},
	} {
		if err := c.ValidateProblem(tc.status, tc.header, []byte(tc.body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Every operation documents 503: any of them meets it when a dependency
// restarts or the gateway cannot reach the service (gateway/e2erecovery
// validates those answers against the operation).
func TestEveryOperationDocumentsUnavailable(t *testing.T) {
	c := load(t)
	n := 0
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			n++
			if op.Responses.Status(http.StatusServiceUnavailable) == nil {
				t.Errorf("%s %s does not document 503", method, path)
			}
		}
	}
	if n < 80 {
		t.Errorf("only %d operations found", n)
	}
}
