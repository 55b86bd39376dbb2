package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/paging"
	"supportplatform.dev/services/mail/internal/httpapi"
	"supportplatform.dev/services/mail/internal/mail"
)

// fakeConnections answers the callback with res and err and records the
// input.
type fakeConnections struct {
	res  mail.CallbackResult
	err  error
	last *mail.CallbackInput
}

func (f *fakeConnections) StartConnection(context.Context, int64, int64, mail.ConnectionInput) (mail.StartedConnection, error) {
	return mail.StartedConnection{}, errors.New("not used")
}

func (f *fakeConnections) ListConnections(context.Context, int64, paging.Page) ([]mail.Connection, int, error) {
	return nil, 0, errors.New("not used")
}

func (f *fakeConnections) Connection(context.Context, int64, int64) (mail.Connection, error) {
	return mail.Connection{}, errors.New("not used")
}

func (f *fakeConnections) DeleteConnection(context.Context, int64, int64) error {
	return errors.New("not used")
}

func (f *fakeConnections) Callback(_ context.Context, in mail.CallbackInput) (mail.CallbackResult, error) {
	f.last = &in
	return f.res, f.err
}

func callbackServer(t *testing.T, conns httpapi.Connections) http.Handler {
	t.Helper()
	s, err := httpserver.New(httpserver.Options{Service: "mailingest-test", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	deny := func(c *gin.Context) { s.Fail(c, apperr.E(apperr.Unauthorized, "no token")) }
	httpapi.New(nil, nil, nil, conns, s).Routes(s.Engine, deny, deny)
	return s.Handler()
}

const chromiumAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8"

// A browser's navigation ends on the console's connections page (303, a
// fixed relative path, the outcome in the query and nothing of the
// request's text); an API client keeps the JSON answers; the redirect to
// admin consent stays a 302 for both.
func TestConnectionCallbackAnswers(t *testing.T) {
	connected := &mail.Connection{ID: 42, CustomerID: 1, Provider: "microsoft365", Status: mail.ConnectionConnected, TenantID: "t"}
	evil := "https://evil.example/x"
	cases := []struct {
		name     string
		res      mail.CallbackResult
		err      error
		query    string
		accept   string
		status   int
		location string
		ctype    string
	}{
		{"browser, connected", mail.CallbackResult{Connection: connected, ConnectionID: 42}, nil, "state=s&tenant=t", chromiumAccept,
			http.StatusSeeOther, "/admin/connections?connection=42&outcome=connected", ""},
		{"browser, refused consent", mail.CallbackResult{ConnectionID: 42},
			apperr.E(apperr.Invalid, "the Microsoft 365 admin consent was not completed: access_denied: <script>"),
			"state=s&error=access_denied&error_description=" + evil, chromiumAccept,
			http.StatusSeeOther, "/admin/connections?code=invalid&connection=42&outcome=error", ""},
		{"browser, tenant of another customer", mail.CallbackResult{ConnectionID: 7}, apperr.E(apperr.Conflict, "taken"), "state=s", chromiumAccept,
			http.StatusSeeOther, "/admin/connections?code=conflict&connection=7&outcome=error", ""},
		{"browser, unknown state", mail.CallbackResult{}, apperr.Field("state", "is unknown", "unknown"), "state=forged", chromiumAccept,
			http.StatusSeeOther, "/admin/connections?code=invalid&outcome=error", ""},
		{"browser, internal error", mail.CallbackResult{ConnectionID: 3}, errors.New("db password hunter2"), "state=s", chromiumAccept,
			http.StatusSeeOther, "/admin/connections?code=internal&connection=3&outcome=error", ""},
		{"browser, an unlisted code", mail.CallbackResult{ConnectionID: 3}, apperr.E(apperr.TooLarge, "big"), "state=s", chromiumAccept,
			http.StatusSeeOther, "/admin/connections?code=internal&connection=3&outcome=error", ""},
		{"browser, state given twice", mail.CallbackResult{Connection: connected}, nil, "state=a&STATE=b", chromiumAccept,
			http.StatusSeeOther, "/admin/connections?code=invalid&outcome=error", ""},
		{"browser, on to admin consent", mail.CallbackResult{Redirect: "https://login.example/t/v2.0/adminconsent?state=x", ConnectionID: 42}, nil,
			"state=s&code=c", chromiumAccept, http.StatusFound, "https://login.example/t/v2.0/adminconsent?state=x", ""},
		{"API client, connected", mail.CallbackResult{Connection: connected, ConnectionID: 42}, nil, "state=s", "",
			http.StatusOK, "", "application/json; charset=utf-8"},
		{"API client asking JSON, refused", mail.CallbackResult{ConnectionID: 42}, apperr.E(apperr.Invalid, "refused"), "state=s", "application/json",
			http.StatusBadRequest, "", httpserver.ProblemContentType},
		{"curl, conflict", mail.CallbackResult{ConnectionID: 7}, apperr.E(apperr.Conflict, "taken"), "state=s", "*/*",
			http.StatusConflict, "", httpserver.ProblemContentType},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conns := &fakeConnections{res: tc.res, err: tc.err}
			h := callbackServer(t, conns)
			req := httptest.NewRequest(http.MethodGet, "/api/ProviderConnections/callback?"+tc.query, nil)
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if got := rec.Header().Get("Location"); got != tc.location {
				t.Errorf("Location %q, want %q", got, tc.location)
			}
			if tc.ctype != "" && rec.Header().Get("Content-Type") != tc.ctype {
				t.Errorf("Content-Type %q, want %q", rec.Header().Get("Content-Type"), tc.ctype)
			}
			if rec.Header().Get("Cache-Control") != "no-store" || rec.Header().Get("Referrer-Policy") != "no-referrer" {
				t.Errorf("headers %v", rec.Header())
			}
			if tc.location != "" && rec.Body.Len() != 0 {
				t.Errorf("a redirect with a body %q", rec.Body)
			}
		})
	}
}
