package staticproblem

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRefusesWithoutCallingNext(t *testing.T) {
	called := false
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true })
	cfg := CreateConfig()
	cfg.Detail = "use https"
	h, err := New(context.Background(), next, cfg, "test")
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name      string
		method    string
		target    string
		requestID string
		wantID    string
	}{
		{name: "get with client request id", method: http.MethodGet, target: "/api/Customers/me", requestID: "abc-123", wantID: "abc-123"},
		{name: "post body", method: http.MethodPost, target: "/api/Auth/login"},
		{name: "hostile request id replaced", method: http.MethodDelete, target: "/x", requestID: "a\"b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.target, strings.NewReader(`{"password":"p"}`))
			if tc.requestID != "" {
				req.Header.Set("X-Request-Id", tc.requestID)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)

			if rec.Code != http.StatusForbidden {
				t.Errorf("status = %d, want 403", rec.Code)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if loc := rec.Header().Get("Location"); loc != "" {
				t.Errorf("redirects to %q", loc)
			}
			var p map[string]interface{}
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
				t.Fatalf("body %q: %v", rec.Body.String(), err)
			}
			if p["status"] != float64(403) || p["title"] != "HTTPS required" || p["detail"] != "use https" || p["instance"] != tc.target {
				t.Errorf("problem = %v", p)
			}
			id, _ := p["requestId"].(string)
			if tc.wantID != "" && id != tc.wantID {
				t.Errorf("requestId = %q, want %q", id, tc.wantID)
			}
			if !validRequestID(id) || rec.Header().Get("X-Request-Id") != id {
				t.Errorf("requestId %q / header %q", id, rec.Header().Get("X-Request-Id"))
			}
		})
	}
	if called {
		t.Error("next handler was called")
	}
}

func TestConfiguredNotFound(t *testing.T) {
	cfg := CreateConfig()
	cfg.Status, cfg.Title, cfg.Type, cfg.CloseConnection = 404, "Not Found", "https://supportplatform.dev/problems/not_found", false
	h, err := New(context.Background(), nil, cfg, "nf")
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/nowhere", nil))
	var p map[string]interface{}
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 404 || p["status"] != float64(404) || rec.Header().Get("Connection") == "close" {
		t.Fatalf("%d %v %v", rec.Code, p, rec.Header())
	}
	cfg.Status = 200
	if _, err := New(context.Background(), nil, cfg, "bad"); err == nil {
		t.Fatal("a non-error status must be refused")
	}
}
