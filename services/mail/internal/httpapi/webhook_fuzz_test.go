package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/services/mail/internal/mail"
)

// countingWebhook accepts everything and remembers the items of each call.
type countingWebhook struct {
	mu    sync.Mutex
	calls [][]mail.Notification
}

func (w *countingWebhook) Notify(_ context.Context, items []mail.Notification) (mail.NotifyResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, items)
	return mail.NotifyResult{Received: len(items), Queued: len(items)}, nil
}

func (w *countingWebhook) take() [][]mail.Notification {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.calls
	w.calls = nil
	return c
}

func postWebhook(h http.Handler, rawQuery string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/api/ProviderWebhook", bytes.NewReader(body))
	req.URL.RawQuery = rawQuery
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// FuzzWebhookNotify posts any query and body to the provider webhook, as
// anyone on the internet can: the answer is the echoed validation token, a
// 200 JSON count of exactly the items passed on, or a 4xx problem; never a
// 5xx, and never text that PostgreSQL cannot store passed to the domain.
func FuzzWebhookNotify(f *testing.F) {
	f.Add("", []byte(docChangeNotification))
	f.Add("", []byte(`{"value":[{"subscriptionId":"s","clientState":"c","lifecycleEvent":"missed"}]}`))
	f.Add("", []byte(`{"value":[{"subscriptionId":"s","resource":"Users/x/Messages/y","resourceData":{"id":"y"},"subscriptionExpirationDateTime":"2026-01-01T00:00:00Z"}]}`))
	f.Add("", []byte(`{"value":[]}`))
	f.Add("", []byte(" \r\n"))
	f.Add("", []byte(`{"value":null}`))
	f.Add("", []byte(`{"VALUE":[{"SubscriptionID":"s"}],"value":[]}`))
	f.Add("", []byte(`{"value":[{"clientState":"a\u0000b"}]}`))
	f.Add("", []byte("{\"value\":[{\"clientState\":\"\xff\"}]}"))
	f.Add("", []byte(`{"value":[{"subscriptionId":42}]}`))
	f.Add("", []byte(`{"value":[]} {"value":[]}`))
	f.Add("", []byte(`[{"subscriptionId":"s"}]`))
	f.Add("validationToken=Validation%3A+Token", []byte("ignored"))
	f.Add("validationtoken=abc&validationToken=def", []byte{})
	f.Add("validationToken=", []byte{})
	f.Add("validationToken=%ff", []byte{})
	f.Add("validationToken=%zz", []byte{})
	f.Add("validationToken="+strings.Repeat("x", 1025), []byte{})
	f.Add("other=1", []byte(`{"value":[{}]}`))
	// Fields over Graph's sizes and values (the domain drops them first).
	f.Add("", []byte(`{"value":[{"subscriptionId":"`+strings.Repeat("d", 4096)+`","clientState":"c"}]}`))
	f.Add("", []byte(`{"value":[{"subscriptionId":"s","clientState":"`+strings.Repeat("c", 129)+`"}]}`))
	f.Add("", []byte(`{"value":[{"subscriptionId":"s","changeType":"created,updated","tenantId":"`+strings.Repeat("t", 37)+`"}]}`))
	f.Add("", []byte(`{"value":[{"subscriptionId":"s","resource":"`+strings.Repeat("r", 1025)+`","lifecycleEvent":"x"}]}`))
	wh := &countingWebhook{}
	h := newServer(f, wh)
	f.Fuzz(func(t *testing.T, rawQuery string, body []byte) {
		wh.take()
		rec := postWebhook(h, rawQuery, body)
		calls := wh.take()
		status, ctype := rec.Code, rec.Header().Get("Content-Type")
		if status >= 500 || (status != http.StatusOK && status < 400) {
			t.Fatalf("status %d: %s", status, rec.Body)
		}
		if status != http.StatusOK {
			var p httpserver.Problem
			if ctype != httpserver.ProblemContentType || json.Unmarshal(rec.Body.Bytes(), &p) != nil || p.Status != status {
				t.Fatalf("%d answer is not its problem+json: %q %s", status, ctype, rec.Body)
			}
			if len(calls) != 0 {
				t.Fatalf("a %d passed %d calls on", status, len(calls))
			}
			return
		}
		if tokens := validationTokens(rawQuery); tokens != nil {
			if ctype != "text/plain; charset=utf-8" || !tokens[rec.Body.String()] || len(calls) != 0 {
				t.Fatalf("handshake answered %q %q (calls %d); tokens %v", ctype, rec.Body, len(calls), tokens)
			}
			return
		}
		var res struct{ Received, Queued int }
		if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
			t.Fatalf("200 is not the JSON count: %q %s", ctype, rec.Body)
		}
		passed := 0
		for _, c := range calls {
			passed += len(c)
			for _, n := range c {
				for _, s := range []string{n.SubscriptionID, n.ClientState, n.ChangeType, n.Resource, n.ResourceID, n.TenantID, n.LifecycleEvent} {
					if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
						t.Fatalf("item with unstorable text %q passed on", s)
					}
				}
			}
		}
		if len(calls) > 1 || res.Received != passed || res.Queued != passed {
			t.Fatalf("answer %s for %d calls of %d items", rec.Body, len(calls), passed)
		}
		var doc struct{ Value []json.RawMessage }
		if len(bytes.TrimSpace(body)) > 0 {
			if err := json.Unmarshal(body, &doc); err != nil || len(doc.Value) != passed {
				t.Fatalf("body %q: %d items passed on, decoding sees %d (%v)", body, passed, len(doc.Value), err)
			}
		} else if passed != 0 {
			t.Fatalf("an empty body passed %d items on", passed)
		}
	})
}

// validationTokens is the set of tokens the handshake may echo for a query
// the server accepts (nil when it has none): the value of validationToken,
// else of the name in any case (which one, if several, is not defined).
func validationTokens(rawQuery string) map[string]bool {
	vals, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil
	}
	if vs, ok := vals["validationToken"]; ok && len(vs) > 0 {
		return map[string]bool{vs[0]: true}
	}
	var out map[string]bool
	for k, vs := range vals {
		if strings.EqualFold(k, "validationToken") && len(vs) > 0 {
			if out == nil {
				out = map[string]bool{}
			}
			out[vs[0]] = true
		}
	}
	return out
}

// FuzzWebhookNotification builds one well-formed notification from any
// field values: it is accepted (200) and reaches the domain with exactly
// those values (JSON carries invalid UTF-8 as U+FFFD; U+0000 is refused).
func FuzzWebhookNotification(f *testing.F) {
	f.Add("7f105c7d-2dc5-4530-97cd-4e7ae6534c07", "SecretClientState", "created",
		"Users/9f4a2c1e-3b5d-4e6f-8a7b-0c1d2e3f4a5b/Messages/AAMkAGI2", "AAMkAGI2", "", "2026-11-21T12:00:00.0000000Z")
	f.Add("sub", "", "", "", "", "reauthorizationRequired", "")
	f.Add("sub", "state", "updated", "/users/a@b.example/mailFolders('inbox')/messages", "", "missed", "not a time")
	f.Add("\xff", "a\x00b", "é", "✓", "", "subscriptionRemoved", "2026-02-30T00:00:00Z")
	wh := &countingWebhook{}
	h := newServer(f, wh)
	f.Fuzz(func(t *testing.T, subID, clientState, changeType, resource, resourceID, lifecycle, expiry string) {
		item := map[string]any{"subscriptionId": subID, "clientState": clientState, "changeType": changeType,
			"resource": resource, "resourceData": map[string]string{"id": resourceID, "@odata.type": "#Microsoft.Graph.Message"},
			"tenantId": "84bd8158-6d4d-4958-8b9f-9d6445542f95", "lifecycleEvent": lifecycle,
			"subscriptionExpirationDateTime": expiry}
		body, err := json.Marshal(map[string]any{"value": []any{item}})
		if err != nil {
			t.Fatal(err)
		}
		wh.take()
		rec := postWebhook(h, "", body)
		calls := wh.take()
		fields := []string{subID, clientState, changeType, resource, resourceID, lifecycle, expiry}
		hasNUL := false
		for _, s := range fields {
			hasNUL = hasNUL || strings.ContainsRune(s, 0)
		}
		if hasNUL {
			if rec.Code != http.StatusBadRequest || len(calls) != 0 {
				t.Fatalf("a NUL: %d %s, %d calls; want 400", rec.Code, rec.Body, len(calls))
			}
			return
		}
		if rec.Code != http.StatusOK || len(calls) != 1 || len(calls[0]) != 1 {
			t.Fatalf("answer %d %s, calls %v", rec.Code, rec.Body, calls)
		}
		// Marshal writes each invalid byte as U+FFFD, as a []rune conversion does.
		v := func(s string) string { return string([]rune(s)) }
		n := calls[0][0]
		want := mail.Notification{SubscriptionID: v(subID), ClientState: v(clientState), ChangeType: v(changeType),
			Resource: v(resource), ResourceID: v(resourceID), TenantID: "84bd8158-6d4d-4958-8b9f-9d6445542f95",
			LifecycleEvent: v(lifecycle)}
		if ts, err := time.Parse(time.RFC3339Nano, v(expiry)); err == nil {
			want.SubscriptionExpiration = ts.UTC()
		}
		if !n.SubscriptionExpiration.Equal(want.SubscriptionExpiration) {
			t.Fatalf("expiry %v, want %v", n.SubscriptionExpiration, want.SubscriptionExpiration)
		}
		n.SubscriptionExpiration, want.SubscriptionExpiration = time.Time{}, time.Time{}
		if n != want {
			t.Fatalf("passed on %+v, want %+v", n, want)
		}
	})
}
