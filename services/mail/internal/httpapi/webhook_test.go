package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/services/mail/internal/httpapi"
	"supportplatform.dev/services/mail/internal/mail"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fakeWebhook records what the handler passes on.
type fakeWebhook struct {
	mu    sync.Mutex
	calls [][]mail.Notification
	res   mail.NotifyResult
	err   error
	block bool // wait for the context to end
}

func (w *fakeWebhook) Notify(ctx context.Context, items []mail.Notification) (mail.NotifyResult, error) {
	w.mu.Lock()
	w.calls = append(w.calls, items)
	w.mu.Unlock()
	if w.block {
		<-ctx.Done()
		return mail.NotifyResult{}, apperr.Wrap(apperr.Unavailable, ctx.Err(), "timed out")
	}
	return w.res, w.err
}

func newServer(t testing.TB, wh httpapi.Webhook) http.Handler {
	t.Helper()
	s, err := httpserver.New(httpserver.Options{Service: "mailingest-test", Logger: quiet, MaxBodyBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	deny := func(c *gin.Context) { s.Fail(c, apperr.E(apperr.Unauthorized, "no token")) }
	httpapi.New(nil, nil, wh, nil, s).Routes(s.Engine, deny, deny)
	return s.Handler()
}

type answer struct {
	status int
	ctype  string
	body   string
}

func do(t *testing.T, h http.Handler, method, target, ctype, body string) answer {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return answer{rec.Code, rec.Header().Get("Content-Type"), rec.Body.String()}
}

func TestWebhookValidationToken(t *testing.T) {
	tokens := []struct {
		name  string
		token string
	}{
		{"graph-like with spaces and colons", "Validation: Token-ID: 80ed5d5e-d7e6-4c2c-b2ea-8c2d8a6b5b8e"},
		{"unicode", "Jeton de validation : été ✓ 検証"},
		{"leading and trailing spaces kept", "  padded token  "},
		{"JSON-looking text stays raw", `{"a":"b"} <script>`},
		{"plus and percent", "a+b%c=d&e"},
	}
	wh := &fakeWebhook{}
	h := newServer(t, wh)
	for _, tt := range tokens {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			for _, path := range []string{"/api/ProviderWebhook", "/api/providerwebhook"} {
				t.Run(tt.name+" "+method+" "+path, func(t *testing.T) {
					// The provider's handshake POST is text/plain and may carry a body.
					a := do(t, h, method, path+"?validationToken="+url.QueryEscape(tt.token), "text/plain; charset=utf-8", "ignored body")
					if a.status != http.StatusOK || a.ctype != "text/plain; charset=utf-8" || a.body != tt.token {
						t.Fatalf("answer %d %q %q; want 200 text/plain %q", a.status, a.ctype, a.body, tt.token)
					}
				})
			}
		}
	}
	t.Run("plus decodes to a space", func(t *testing.T) {
		if a := do(t, h, http.MethodGet, "/api/ProviderWebhook?validationToken=a+b%3Ac", "", ""); a.status != 200 || a.body != "a b:c" {
			t.Fatalf("answer %+v", a)
		}
	})
	t.Run("name in another case", func(t *testing.T) {
		if a := do(t, h, http.MethodGet, "/api/ProviderWebhook?validationtoken=abc", "", ""); a.status != 200 || a.body != "abc" {
			t.Fatalf("answer %+v", a)
		}
	})
	if len(wh.calls) != 0 {
		t.Errorf("the handshake reached the domain: %d calls", len(wh.calls))
	}
}

// wantProblem checks a problem+json answer and returns it.
func wantProblem(t *testing.T, a answer, status int) httpserver.Problem {
	t.Helper()
	if a.status != status || a.ctype != httpserver.ProblemContentType {
		t.Fatalf("answer %d %q %s; want %d problem+json", a.status, a.ctype, a.body, status)
	}
	var p httpserver.Problem
	if err := json.Unmarshal([]byte(a.body), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWebhookBadRequests(t *testing.T) {
	wh := &fakeWebhook{}
	h := newServer(t, wh)
	long := strings.Repeat("x", 1025)
	items := make([]string, 1001)
	for i := range items {
		items[i] = `{"subscriptionId":"s"}`
	}
	tests := []struct {
		name, method, target, ctype, body string
		field                             string // expected field error, if any
	}{
		{"GET without token", http.MethodGet, "/api/ProviderWebhook", "", "", "validationToken"},
		{"GET with other parameters only", http.MethodGet, "/api/providerwebhook?token=x", "", "", "validationToken"},
		{"empty token", http.MethodGet, "/api/ProviderWebhook?validationToken=", "", "", "validationToken"},
		{"token too long", http.MethodPost, "/api/ProviderWebhook?validationToken=" + long, "", "", "validationToken"},
		{"token not UTF-8", http.MethodGet, "/api/ProviderWebhook?validationToken=%ff", "", "", ""},
		{"malformed JSON", http.MethodPost, "/api/ProviderWebhook", "application/json", `{"value":[`, ""},
		{"not JSON", http.MethodPost, "/api/ProviderWebhook", "text/plain", `hello`, ""},
		{"value not an array", http.MethodPost, "/api/ProviderWebhook", "application/json", `{"value":{"subscriptionId":"s"}}`, "value"},
		{"value missing", http.MethodPost, "/api/ProviderWebhook", "application/json", `{"values":[]}`, "value"},
		{"value null", http.MethodPost, "/api/ProviderWebhook", "application/json", `{"value":null}`, "value"},
		{"body an array", http.MethodPost, "/api/ProviderWebhook", "application/json", `[{"subscriptionId":"s"}]`, ""},
		{"wrong item type", http.MethodPost, "/api/ProviderWebhook", "application/json", `{"value":[{"subscriptionId":42}]}`, "value.subscriptionId"},
		{"item not an object", http.MethodPost, "/api/ProviderWebhook", "application/json", `{"value":["s"]}`, ""},
		{"invalid UTF-8", http.MethodPost, "/api/ProviderWebhook", "application/json", "{\"value\":[{\"clientState\":\"\xff\"}]}", ""},
		{"two JSON values", http.MethodPost, "/api/ProviderWebhook", "application/json", `{"value":[]} {"value":[]}`, ""},
		{"too many items", http.MethodPost, "/api/ProviderWebhook", "application/json", `{"value":[` + strings.Join(items, ",") + `]}`, "value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := wantProblem(t, do(t, h, tt.method, tt.target, tt.ctype, tt.body), http.StatusBadRequest)
			if tt.field != "" && p.Errors[tt.field] == "" {
				t.Errorf("errors %v, want one for %s", p.Errors, tt.field)
			}
		})
	}
	if len(wh.calls) != 0 {
		t.Errorf("bad requests reached the domain: %d calls", len(wh.calls))
	}
	t.Run("body over the limit", func(t *testing.T) {
		wantProblem(t, do(t, h, http.MethodPost, "/api/ProviderWebhook", "application/json", `{"value":[`+strings.Repeat(" ", 70<<10)+`]}`),
			http.StatusRequestEntityTooLarge)
	})
}

func TestWebhookEmptyBodies(t *testing.T) {
	wh := &fakeWebhook{}
	h := newServer(t, wh)
	for _, body := range []string{"", " ", "\r\n\t  \n"} {
		for _, ctype := range []string{"", "application/json", "text/plain"} {
			a := do(t, h, http.MethodPost, "/api/providerwebhook", ctype, body)
			if a.status != http.StatusOK || !strings.Contains(a.body, `"received":0`) {
				t.Errorf("body %q (%s): answer %+v, want 200 with nothing received", body, ctype, a)
			}
		}
	}
	a := do(t, h, http.MethodPost, "/api/ProviderWebhook", "application/json", `{"value":[]}`)
	if a.status != http.StatusOK || !strings.Contains(a.body, `"received":0`) {
		t.Errorf("empty value: %+v", a)
	}
	if len(wh.calls) != 0 {
		t.Errorf("empty bodies reached the domain: %d calls", len(wh.calls))
	}
}

// docChangeNotification is Microsoft's documentation example of a new-mail
// change notification (Graph's "Receive change notifications" page).
const docChangeNotification = `{
  "value": [
    {
      "id": "lsgTZMr9KwAAA",
      "subscriptionId": "d1a2b3c4-0000-4a4a-9b9b-123456789abc",
      "subscriptionExpirationDateTime": "2016-03-19T22:11:09.952Z",
      "clientState": "secretClientValue",
      "changeType": "created",
      "resource": "users/{user_guid}@{tenant_guid}/messages/{long_id_string}",
      "tenantId": "84bd8158-6d4d-4958-8b9f-9d6445542f95",
      "resourceData": {
        "@odata.type": "#Microsoft.Graph.Message",
        "@odata.id": "Users/{user_guid}@{tenant_guid}/Messages/{long_id_string}",
        "@odata.etag": "W/\"CQAAABYAAADkrWGo7bouTKlsgTZMr9KwAAAUWRHf\"",
        "id": "{long_id_string}"
      }
    },
    {
      "lifecycleEvent": "reauthorizationRequired",
      "subscriptionId": "d1a2b3c4-0000-4a4a-9b9b-123456789abc",
      "subscriptionExpirationDateTime": "2019-03-20T11:00:00.0000000Z",
      "clientState": "secretClientValue",
      "tenantId": "84bd8158-6d4d-4958-8b9f-9d6445542f95"
    }
  ]
}`

func TestWebhookNotifications(t *testing.T) {
	wh := &fakeWebhook{res: mail.NotifyResult{Received: 2, Queued: 1, Handled: 1}}
	h := newServer(t, wh)
	for _, ctype := range []string{"application/json; charset=utf-8", "text/plain", ""} {
		a := do(t, h, http.MethodPost, "/api/providerwebhook", ctype, docChangeNotification)
		if a.status != http.StatusOK || !strings.HasPrefix(a.ctype, "application/json") {
			t.Fatalf("%s: answer %+v", ctype, a)
		}
		var got map[string]int
		if err := json.Unmarshal([]byte(a.body), &got); err != nil {
			t.Fatal(err)
		}
		if got["received"] != 2 || got["queued"] != 1 || got["handled"] != 1 || got["dropped"] != 0 {
			t.Errorf("body %s", a.body)
		}
	}
	want := []mail.Notification{
		{SubscriptionID: "d1a2b3c4-0000-4a4a-9b9b-123456789abc", SubscriptionExpiration: time.Date(2016, 3, 19, 22, 11, 9, 952e6, time.UTC),
			ClientState: "secretClientValue", ChangeType: "created", Resource: "users/{user_guid}@{tenant_guid}/messages/{long_id_string}",
			ResourceID: "{long_id_string}", TenantID: "84bd8158-6d4d-4958-8b9f-9d6445542f95"},
		{SubscriptionID: "d1a2b3c4-0000-4a4a-9b9b-123456789abc", SubscriptionExpiration: time.Date(2019, 3, 20, 11, 0, 0, 0, time.UTC),
			ClientState: "secretClientValue", TenantID: "84bd8158-6d4d-4958-8b9f-9d6445542f95", LifecycleEvent: "reauthorizationRequired"},
	}
	if len(wh.calls) != 3 {
		t.Fatalf("calls = %d", len(wh.calls))
	}
	for i, w := range want {
		if got := wh.calls[0][i]; got != w {
			t.Errorf("item %d = %+v\nwant %+v", i, got, w)
		}
	}
}

func TestWebhookDomainErrors(t *testing.T) {
	t.Run("queue down is 503", func(t *testing.T) {
		wh := &fakeWebhook{err: apperr.Wrap(apperr.Unavailable, errors.New("nats down"), "could not be queued")}
		h := newServer(t, wh)
		wantProblem(t, do(t, h, http.MethodPost, "/api/ProviderWebhook", "application/json", docChangeNotification), http.StatusServiceUnavailable)
	})
	t.Run("out of time is 503 within the budget", func(t *testing.T) {
		wh := &fakeWebhook{block: true}
		h := newServer(t, wh)
		start := time.Now()
		wantProblem(t, do(t, h, http.MethodPost, "/api/ProviderWebhook", "application/json", docChangeNotification), http.StatusServiceUnavailable)
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("answered after %v, want under 3 s", d)
		}
	})
}

// targetStore is a NotifierStore with one folder.
type targetStore struct{ t mail.Target }

func (s targetStore) TargetBySubscription(_ context.Context, id string) (mail.Target, error) {
	if id != s.t.Folder.SubscriptionID {
		return mail.Target{}, apperr.E(apperr.NotFound, "subscription not found")
	}
	return s.t, nil
}
func (targetStore) TargetsByMailbox(context.Context, string, string) ([]mail.Target, error) {
	return nil, nil
}
func (targetStore) MarkNotified(context.Context, int64, time.Time) error                { return nil }
func (targetStore) RequestRenewal(context.Context, int64, time.Time) error              { return nil }
func (targetStore) SubscriptionRemoved(context.Context, int64, string, time.Time) error { return nil }
func (targetStore) PendingTargets(context.Context, string) ([]mail.Target, error)       { return nil, nil }

type switchQueue struct {
	mu   sync.Mutex
	fail bool
	reqs []contracts.MailImportRequest
}

func (q *switchQueue) Import(_ context.Context, r contracts.MailImportRequest) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fail {
		return errors.New("nats: timeout")
	}
	q.reqs = append(q.reqs, r)
	return nil
}

// TestWebhookWithNotifier runs the handler over the real domain: a queue
// failure is a 503 and the provider's retry queues the import.
func TestWebhookWithNotifier(t *testing.T) {
	target := mail.Target{ClientState: "secretClientValue",
		Folder:  mail.Folder{ID: 5, CustomerID: 3, ChannelID: 4, AutoRetrieveEmails: true, SubscriptionID: "d1a2b3c4-0000-4a4a-9b9b-123456789abc"},
		Channel: mail.Channel{ID: 4, CustomerID: 3, AutoRetrieveEmails: true}}
	q := &switchQueue{fail: true}
	now := func() time.Time { return time.Date(2025, 3, 4, 5, 6, 8, 0, time.UTC) }
	n := mail.NewNotifier(targetStore{target}, q, now, quiet, prometheus.NewRegistry(), mail.NotifierOptions{})
	defer n.Close()
	h := newServer(t, n)
	wantProblem(t, do(t, h, http.MethodPost, "/api/ProviderWebhook", "application/json", docChangeNotification), http.StatusServiceUnavailable)
	q.mu.Lock()
	q.fail = false
	q.mu.Unlock()
	a := do(t, h, http.MethodPost, "/api/ProviderWebhook", "application/json", docChangeNotification)
	if a.status != http.StatusOK || a.body != `{"received":2,"queued":1,"handled":1,"parked":0,"dropped":0}` {
		t.Fatalf("answer %+v", a)
	}
	if len(q.reqs) != 1 || q.reqs[0].FolderID != 5 || q.reqs[0].CustomerID != 3 || q.reqs[0].Reason != contracts.ImportNotification {
		t.Errorf("imports %+v", q.reqs)
	}
	// A forged item is still a 200.
	forged := strings.ReplaceAll(docChangeNotification, "secretClientValue", "guessed")
	a = do(t, h, http.MethodPost, "/api/ProviderWebhook", "application/json", forged)
	if a.status != http.StatusOK || !strings.Contains(a.body, `"dropped":2`) {
		t.Fatalf("forged: %+v", a)
	}
}
