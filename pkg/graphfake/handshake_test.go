package graphfake

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestValidationHandshake(t *testing.T) {
	tests := []struct {
		name           string
		reply          func(w http.ResponseWriter, token string) // nil: the correct echo
		mode           HandshakeMode
		lifecycle      bool
		url            string // replaces the notification URL
		wantStatus     int
		wantHandshakes int
	}{
		{name: "correct echo", wantStatus: http.StatusCreated, wantHandshakes: 1},
		{name: "correct echo on both URLs", lifecycle: true, wantStatus: http.StatusCreated, wantHandshakes: 2},
		{name: "echo without charset", reply: func(w http.ResponseWriter, token string) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, token)
		}, wantStatus: http.StatusCreated, wantHandshakes: 1},
		{name: "echo of the encoded token", reply: func(w http.ResponseWriter, token string) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, url.QueryEscape(token))
		}, wantStatus: http.StatusBadRequest, wantHandshakes: 1},
		{name: "echo with a newline", reply: func(w http.ResponseWriter, token string) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, token+"\n")
		}, wantStatus: http.StatusBadRequest, wantHandshakes: 1},
		{name: "echo as JSON", reply: func(w http.ResponseWriter, token string) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `"`+token+`"`)
		}, wantStatus: http.StatusBadRequest, wantHandshakes: 1},
		{name: "202 instead of 200", reply: func(w http.ResponseWriter, token string) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, token)
		}, wantStatus: http.StatusBadRequest, wantHandshakes: 1},
		{name: "redirect", reply: func(w http.ResponseWriter, token string) {
			w.Header().Set("Location", "/elsewhere?validationToken="+url.QueryEscape(token))
			w.WriteHeader(http.StatusTemporaryRedirect)
		}, wantStatus: http.StatusBadRequest, wantHandshakes: 1},
		{name: "unreachable endpoint", url: "https://127.0.0.1:1/api/providerwebhook", wantStatus: http.StatusBadRequest},
		{name: "skipped", mode: HandshakeSkip, url: "https://127.0.0.1:1/api/providerwebhook", wantStatus: http.StatusCreated},
		{name: "forced failure", mode: HandshakeFail, wantStatus: http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.recv.setReply(tt.reply)
			e.fake.SetHandshake(tt.mode)
			body := e.newSub("a@b.example", "inbox")
			if tt.lifecycle {
				body["lifecycleNotificationUrl"] = e.recv.url("/api/providerwebhook/lifecycle")
			}
			if tt.url != "" {
				body["notificationUrl"] = tt.url
			}
			r := e.call(http.MethodPost, "/subscriptions", e.token(tenantA), body)
			if r.status != tt.wantStatus {
				t.Fatalf("create: %d %s, want %d", r.status, r.body, tt.wantStatus)
			}
			if tt.wantStatus == http.StatusBadRequest && r.errorCode() != "ValidationError" {
				t.Errorf("code %q, want ValidationError", r.errorCode())
			}
			if tt.wantStatus == http.StatusBadRequest && len(e.fake.Subscriptions()) != 0 {
				t.Error("a subscription that failed validation was stored")
			}
			hs := e.recv.gotHandshakes()
			if len(hs) != tt.wantHandshakes {
				t.Fatalf("%d handshakes, want %d", len(hs), tt.wantHandshakes)
			}
			for _, h := range hs {
				if h.contentType != "text/plain; charset=utf-8" || h.bodyLen != 0 {
					t.Errorf("handshake Content-Type %q, body %d bytes; want text/plain and empty", h.contentType, h.bodyLen)
				}
				// The token is opaque text that only survives a receiver which decodes the query.
				if !strings.HasPrefix(h.token, "Validation: Testing client application reachability") || !strings.HasSuffix(h.token, " ü") {
					t.Errorf("token %q", h.token)
				}
				if !strings.Contains(h.rawQuery, "Validation%3A+Testing") || !strings.Contains(h.rawQuery, "%C3%BC") {
					t.Errorf("raw query %q is not query-encoded", h.rawQuery)
				}
			}
		})
	}
}

func TestLifecycleURLFailingValidationFailsTheCreate(t *testing.T) {
	e := newEnv(t)
	body := e.newSub("a@b.example", "inbox")
	body["lifecycleNotificationUrl"] = "https://127.0.0.1:1/lifecycle"
	r := e.call(http.MethodPost, "/subscriptions", e.token(tenantA), body)
	if r.status != http.StatusBadRequest || r.errorCode() != "ValidationError" || !strings.Contains(string(r.body), "lifecycleNotificationUrl") {
		t.Fatalf("create: %d %s, want 400 ValidationError naming the lifecycle URL", r.status, r.body)
	}
	if n := len(e.recv.gotHandshakes()); n != 1 {
		t.Errorf("%d handshakes with the notification URL, want 1 (it passed; the lifecycle URL failed)", n)
	}
}

func TestHandshakeKeepsTheReceiversQuery(t *testing.T) {
	e := newEnv(t)
	body := e.newSub("a@b.example", "inbox")
	body["notificationUrl"] = e.recv.url("/api/providerwebhook?channel=42")
	e.create(e.token(tenantA), body)
	hs := e.recv.gotHandshakes()
	if len(hs) != 1 || !strings.HasPrefix(hs[0].rawQuery, "channel=42&validationToken=") {
		t.Errorf("handshakes %+v", hs)
	}
}
