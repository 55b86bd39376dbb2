package problemjson

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func serve(t *testing.T, next http.HandlerFunc) *httptest.ResponseRecorder {
	t.Helper()
	h, err := New(context.Background(), next, CreateConfig(), "test")
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/Topics", nil))
	return rec
}

func TestGatewayRateLimitBecomesProblem(t *testing.T) {
	rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
	})
	if rec.Code != 429 || rec.Header().Get("Content-Type") != "application/problem+json" || rec.Header().Get("Retry-After") != "3" {
		t.Fatalf("%d %v", rec.Code, rec.Header())
	}
	var p map[string]interface{}
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	if p["status"] != float64(429) || p["type"] != "https://supportplatform.dev/problems/rate_limited" || p["instance"] != "/api/Topics" {
		t.Fatalf("%v", p)
	}
}

func TestUnlabelledErrorBecomesProblem(t *testing.T) {
	// Traefik's rateLimit writes its 429 without any Content-Type.
	rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte("Too Many Requests"))
	})
	if rec.Code != 429 || rec.Header().Get("Content-Type") != "application/problem+json" || rec.Body.String() == "Too Many Requests" {
		t.Fatalf("%d %v %s", rec.Code, rec.Header(), rec.Body)
	}
}

func TestBadGatewayBecomesProblem(t *testing.T) {
	rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Bad Gateway", http.StatusBadGateway)
	})
	if rec.Code != 502 || rec.Header().Get("Content-Type") != "application/problem+json" {
		t.Fatalf("%d %v %s", rec.Code, rec.Header(), rec.Body)
	}
}

func TestServiceAnswersPassThrough(t *testing.T) {
	for name, tc := range map[string]struct {
		status int
		ctype  string
		body   string
	}{
		"service problem": {429, "application/problem+json", `{"status":429,"detail":"too many failed logins"}`},
		"success":         {200, "application/json", `{"ok":true}`},
		"plain success":   {200, "text/plain", "hello"},
		"no content":      {204, "", ""},
	} {
		rec := serve(t, func(w http.ResponseWriter, r *http.Request) {
			if tc.ctype != "" {
				w.Header().Set("Content-Type", tc.ctype)
			}
			w.WriteHeader(tc.status)
			_, _ = w.Write([]byte(tc.body))
		})
		if rec.Code != tc.status || rec.Body.String() != tc.body || rec.Header().Get("Content-Type") != tc.ctype {
			t.Errorf("%s: %d %q %v", name, rec.Code, rec.Body, rec.Header())
		}
	}
}

func TestImplicitOKPassesThrough(t *testing.T) {
	rec := serve(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("x")) })
	if rec.Code != 200 || rec.Body.String() != "x" {
		t.Fatalf("%d %q", rec.Code, rec.Body)
	}
}
