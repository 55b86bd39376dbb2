package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apicontract"
	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/services/tickets/internal/assistant"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// fakeAssistantDomain answers the assistant's routes; every call records
// the customer it was made for.
type fakeAssistantDomain struct {
	Messages
	customer int64
	docs     tickets.PromptDocumentsResult
	window   tickets.FeedbackWindow
}

func (f *fakeAssistantDomain) PromptDocuments(_ context.Context, customerID, id int64) (tickets.PromptDocumentsResult, error) {
	f.customer = customerID
	if id != 5 {
		return tickets.PromptDocumentsResult{}, apperr.E(apperr.NotFound, "message not found")
	}
	return f.docs, nil
}

func (f *fakeAssistantDomain) Summary(_ context.Context, customerID, id int64) (string, error) {
	f.customer = customerID
	return "Subject: Help. 2 messages.", nil
}

func (f *fakeAssistantDomain) FeedbackReport(_ context.Context, customerID int64, w tickets.FeedbackWindow) ([]tickets.EngineFeedback, error) {
	f.customer, f.window = customerID, w
	return []tickets.EngineFeedback{{Provenance: assistant.Provenance{Engine: "offline", Model: "bm25-v1"},
		Prepared: 4, SentAsPrepared: 2, Modified: 1, Escalations: 1, Dislikes: 3}}, nil
}

// serve routes a request as the role's caller of customer 7 and checks a
// success against gateway/openapi.yaml.
func serveAs(t *testing.T, f *fakeAssistantDomain, role, method, target string) *httptest.ResponseRecorder {
	t.Helper()
	return serveDeps(t, Deps{Messages: f, Summaries: f, Assistant: tickets.NewAssistantFeedback(f)}, role, method, target)
}

func serveDeps(t *testing.T, deps Deps, role, method, target string) *httptest.ResponseRecorder {
	t.Helper()
	doc, err := apicontract.Load("../../../../gateway/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpserver.New(httpserver.Options{Service: "tickets", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	auth := func(c *gin.Context) {
		c.Request = c.Request.WithContext(authn.WithPrincipal(c.Request.Context(),
			authn.Principal{CustomerID: 7, AccountID: 70, Role: role}))
		c.Next()
	}
	pass := func(*gin.Context) {}
	New(deps, srv).Routes(srv.Engine, auth, pass)
	req := httptest.NewRequest(method, target, nil)
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	if rec.Code == http.StatusOK {
		if err := doc.ValidateResponse(req, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
			t.Fatalf("%s %s: %v", method, target, err)
		}
	}
	return rec
}

func TestPromptDocumentsRoute(t *testing.T) {
	tests := []struct {
		name string
		docs tickets.PromptDocumentsResult
		want string
	}{
		{name: "stored with the reply", docs: tickets.PromptDocumentsResult{Stored: true,
			Provenance: assistant.Provenance{Engine: "openai-compatible", Model: "m1"},
			Documents:  []tickets.PromptDocument{{DocumentID: 3, Title: "Refunds", Content: "5 days", Score: 0.75}}},
			want: `{"promptDocuments":[{"documentID":3,"title":"Refunds","content":"5 days","score":0.75}],"source":"reply","engine":"openai-compatible","model":"m1"}`},
		{name: "current ranking", docs: tickets.PromptDocumentsResult{Provenance: assistant.Provenance{Engine: "offline", Model: "bm25-v1"},
			Documents: []tickets.PromptDocument{{DocumentID: 4, Title: "T", Content: "C", Score: 0.5}}},
			want: `{"promptDocuments":[{"documentID":4,"title":"T","content":"C","score":0.5}],"source":"ranking","engine":"offline","model":"bm25-v1"}`},
		{name: "no topics", docs: tickets.PromptDocumentsResult{Documents: []tickets.PromptDocument{}},
			want: `{"promptDocuments":[],"source":"ranking","engine":null,"model":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAssistantDomain{docs: tt.docs}
			rec := serveAs(t, f, authn.RoleAgent, http.MethodGet, "/api/TicketMessages/5/prompt-documents")
			if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != tt.want || f.customer != 7 {
				t.Fatalf("%d %s (customer %d)", rec.Code, rec.Body, f.customer)
			}
		})
	}
	if rec := serveAs(t, &fakeAssistantDomain{}, authn.RoleAgent, http.MethodGet, "/api/TicketMessages/6/prompt-documents"); rec.Code != http.StatusNotFound {
		t.Fatalf("unknown message: %d", rec.Code)
	}
}

func TestSummaryRoute(t *testing.T) {
	f := &fakeAssistantDomain{}
	rec := serveAs(t, f, authn.RoleIntegration, http.MethodGet, "/api/Tickets/3/summary")
	if rec.Code != http.StatusOK || rec.Body.String() != `"Subject: Help. 2 messages."` || f.customer != 7 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

func TestAssistantFeedbackRoute(t *testing.T) {
	day := func(s string) *time.Time {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			t.Fatal(err)
		}
		return &d
	}
	tests := []struct {
		name, role, query string
		status            int
		from, before      *time.Time
	}{
		{name: "admin, whole history", role: authn.RoleAdmin, status: 200},
		{name: "admin, window of whole days", role: authn.RoleAdmin, query: "?from=2025-01-01&TO=2025-01-31", status: 200,
			from: day("2025-01-01"), before: day("2025-02-01")},
		{name: "bad from", role: authn.RoleAdmin, query: "?from=yesterday", status: 400},
		{name: "to before from", role: authn.RoleAdmin, query: "?from=2025-02-01&to=2025-01-01", status: 400},
		{name: "agent", role: authn.RoleAgent, status: 403},
		{name: "integration", role: authn.RoleIntegration, status: 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAssistantDomain{}
			rec := serveAs(t, f, tt.role, http.MethodGet, "/api/Assistant/feedback"+tt.query)
			if rec.Code != tt.status {
				t.Fatalf("status %d %s", rec.Code, rec.Body)
			}
			if tt.status != 200 {
				if f.customer != 0 {
					t.Fatal("the report was read")
				}
				return
			}
			want := `{"engines":[{"engine":"offline","model":"bm25-v1","prepared":4,"sentAsPrepared":2,"modified":1,"escalations":1,"dislikes":3}]}`
			if strings.TrimSpace(rec.Body.String()) != want || f.customer != 7 {
				t.Fatalf("%s (customer %d)", rec.Body, f.customer)
			}
			same := func(a, b *time.Time) bool { return (a == nil) == (b == nil) && (a == nil || a.Equal(*b)) }
			if !same(f.window.From, tt.from) || !same(f.window.Before, tt.before) {
				t.Fatalf("window %v - %v", f.window.From, f.window.Before)
			}
		})
	}
}
