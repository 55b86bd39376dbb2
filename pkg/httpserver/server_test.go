package httpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
)

type item struct {
	Name  *string `json:"name"`
	Count *int    `json:"count"`
	Tags  []string
}

func newTestServer(t *testing.T, checks ...Check) *Server {
	t.Helper()
	s, err := New(Options{Service: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxBodyBytes: 64, Checks: checks})
	if err != nil {
		t.Fatal(err)
	}
	s.Engine.POST("/api/Items", s.Handle(func(c *gin.Context) error {
		var it item
		if err := BindJSON(c, &it); err != nil {
			return err
		}
		c.JSON(http.StatusCreated, it)
		return nil
	}))
	s.Engine.GET("/api/Items/:id", s.Handle(func(c *gin.Context) error {
		switch c.Param("id") {
		case "panic":
			panic("secret internal detail")
		case "boom":
			return errors.New("database password is hunter2")
		case "missing":
			return apperr.E(apperr.NotFound, "item not found")
		}
		c.JSON(http.StatusOK, gin.H{"id": c.Param("id")})
		return nil
	}))
	return s
}

func do(t *testing.T, h http.Handler, method, path, ctype, body string) (*httptest.ResponseRecorder, Problem) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var p Problem
	if rec.Code >= 400 {
		if got := rec.Header().Get("Content-Type"); got != ProblemContentType {
			t.Fatalf("%s %s: content type %q, want problem+json", method, path, got)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatalf("problem body: %v: %s", err, rec.Body)
		}
		if p.Status != rec.Code || p.RequestID == "" || p.Type == "" {
			t.Fatalf("incomplete problem %+v", p)
		}
	}
	return rec, p
}

func TestBindJSONErrors(t *testing.T) {
	h := newTestServer(t).Handler()
	cases := []struct {
		name, ctype, body string
		status            int
		field             string
	}{
		{"ok", "application/json", `{"name":"a","count":2}`, 201, ""},
		{"case-insensitive names", "application/json; charset=utf-8", `{"NAME":"a"}`, 201, ""},
		{"vendor json type", "application/merge-patch+json", `{"name":"a"}`, 201, ""},
		{"malformed", "application/json", `{"name":`, 400, ""},
		{"syntax", "application/json", `{"name" "a"}`, 400, ""},
		{"wrong type", "application/json", `{"count":"many"}`, 400, "count"},
		{"wrong top-level type", "application/json", `[1,2]`, 400, ""},
		{"empty body", "application/json", ``, 400, ""},
		{"two values", "application/json", `{} {}`, 400, ""},
		{"no content type", "", `{"name":"a"}`, 415, ""},
		{"form content type", "application/x-www-form-urlencoded", `name=a`, 415, ""},
		{"garbage content type", ";;;", `{}`, 415, ""},
		{"invalid utf-8", "application/json", "{\"name\":\"Caf\xe9\"}", 400, ""},
		{"too large", "application/json", `{"name":"` + strings.Repeat("x", 100) + `"}`, 413, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec, p := do(t, h, http.MethodPost, "/api/Items", tc.ctype, tc.body)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if tc.field != "" && p.Errors[tc.field] == "" {
				t.Fatalf("want field error for %s, got %+v", tc.field, p)
			}
		})
	}
}

func TestTooLargeWithoutContentLength(t *testing.T) {
	h := newTestServer(t).Handler()
	req := httptest.NewRequest(http.MethodPost, "/api/Items", io.MultiReader(strings.NewReader(`{"name":"`+strings.Repeat("y", 200)+`"}`)))
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
}

func TestErrorsNeverLeakInternals(t *testing.T) {
	h := newTestServer(t).Handler()
	for _, path := range []string{"/api/Items/panic", "/api/Items/boom"} {
		rec, p := do(t, h, http.MethodGet, path, "", "")
		if rec.Code != 500 {
			t.Fatalf("%s: status %d", path, rec.Code)
		}
		if strings.Contains(rec.Body.String(), "secret") || strings.Contains(rec.Body.String(), "hunter2") {
			t.Fatalf("%s leaked internals: %s", path, rec.Body)
		}
		if p.Detail == "" {
			t.Fatalf("%s: no detail", path)
		}
	}
	rec, p := do(t, h, http.MethodGet, "/api/Items/missing", "", "")
	if rec.Code != 404 || p.Detail != "item not found" || p.Type != ProblemTypeBase+"not_found" {
		t.Fatalf("not found mapping: %d %+v", rec.Code, p)
	}
}

func TestRoutingProblems(t *testing.T) {
	h := newTestServer(t).Handler()
	if rec, _ := do(t, h, http.MethodGet, "/api/Nope", "", ""); rec.Code != 404 {
		t.Fatalf("no route: %d", rec.Code)
	}
	if rec, _ := do(t, h, http.MethodDelete, "/api/Items", "", ""); rec.Code != 405 {
		t.Fatalf("no method: %d", rec.Code)
	}
}

func TestCaseInsensitivePaths(t *testing.T) {
	h := newTestServer(t).Handler()
	for _, p := range []string{"/api/Items/Ab1", "/API/ITEMS/Ab1", "/api/items/Ab1"} {
		rec, _ := do(t, h, http.MethodGet, p, "", "")
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"Ab1"`) {
			t.Fatalf("%s: %d %s (param case must be kept)", p, rec.Code, rec.Body)
		}
	}
}

func TestRequestIDEchoedOrMade(t *testing.T) {
	h := newTestServer(t).Handler()
	req := httptest.NewRequest(http.MethodGet, "/api/Items/missing", nil)
	req.Header.Set("X-Request-ID", "abc-123")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Header().Get("X-Request-ID") != "abc-123" || !strings.Contains(rec.Body.String(), `"requestId":"abc-123"`) {
		t.Fatalf("request id not echoed: %v %s", rec.Header(), rec.Body)
	}
	req.Header.Set("X-Request-ID", "bad id\twith spaces")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if id := rec.Header().Get("X-Request-ID"); id == "" || strings.Contains(id, " ") {
		t.Fatalf("invalid id should be replaced, got %q", id)
	}
}

func TestReadiness(t *testing.T) {
	ok := true
	h := newTestServer(t, Check{Name: "db", Check: func(context.Context) error {
		if ok {
			return nil
		}
		return errors.New("down")
	}}).Handler()
	if rec, _ := do(t, h, http.MethodGet, "/readyz", "", ""); rec.Code != 200 {
		t.Fatalf("ready: %d", rec.Code)
	}
	ok = false
	rec, p := do(t, h, http.MethodGet, "/readyz", "", "")
	if rec.Code != 503 || p.Errors["db"] == "" {
		t.Fatalf("not ready: %d %+v", rec.Code, p)
	}
	if rec, _ := do(t, h, http.MethodGet, "/metrics", "", ""); rec.Code != 200 || !strings.Contains(rec.Body.String(), "http_requests_total") {
		t.Fatalf("metrics: %d", rec.Code)
	}
}

func TestMalformedQueryStrings(t *testing.T) {
	h := newTestServer(t).Handler()
	for _, q := range []string{"pageSize=%zz", "name=%ff", "a=%00", "%e9=1"} {
		rec, p := do(t, h, http.MethodGet, "/api/Items/x?"+q, "", "")
		if rec.Code != 400 || p.Detail == "" {
			t.Fatalf("%s: %d %+v", q, rec.Code, p)
		}
	}
	if rec, _ := do(t, h, http.MethodGet, "/api/Items/x?name=caf%C3%A9&x=1", "", ""); rec.Code != 200 {
		t.Fatalf("valid query refused: %d", rec.Code)
	}
}

// A handler that keeps to its request context stops at REQUEST_TIMEOUT and
// answers a 503 problem, not a 500.
func TestRequestTimeoutEndsHandlerContext(t *testing.T) {
	s, err := New(Options{Service: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RequestTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s.Engine.GET("/api/Slow", s.Handle(func(c *gin.Context) error {
		select {
		case <-c.Request.Context().Done():
			return fmt.Errorf("slow call: %w", c.Request.Context().Err())
		case <-time.After(10 * time.Second):
			c.Status(http.StatusNoContent)
			return nil
		}
	}))
	start := time.Now()
	rec, p := do(t, s.Handler(), http.MethodGet, "/api/Slow", "", "")
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("took %v", took)
	}
	if rec.Code != http.StatusServiceUnavailable || p.Type != ProblemTypeBase+"unavailable" {
		t.Fatalf("%d %+v", rec.Code, p)
	}
	if WriteTimeout(time.Minute) <= time.Minute {
		t.Fatal("the write timeout must leave time to answer after the request deadline")
	}
}

// An error a handler returned answers what the Outage rule makes of it
// (its code, detail and Retry-After: the server builds no outage answer of
// its own), and stays as it was when the rule says it is no outage: a
// mapped error keeps its code, anything else is a 500. Nothing of the
// error's text reaches the client. pkg/boot's
// TestDatabaseOutageIsOne503Everywhere runs the real rule, postgres.Outage.
func TestUnmappedOutageErrorIsUnavailable(t *testing.T) {
	errDown := errors.New("FATAL: terminating connection due to administrator command (SQLSTATE 57P01)")
	asked := 0
	s, err := New(Options{Service: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Outage: func(err error) *apperr.Error {
			asked++
			var ae *apperr.Error
			if errors.As(err, &ae) || !errors.Is(err, errDown) {
				return nil
			}
			return &apperr.Error{Code: apperr.Unavailable, Err: err, RetryAfterSeconds: 7, Message: "the rule's answer"}
		}})
	if err != nil {
		t.Fatal(err)
	}
	s.Engine.GET("/api/Items/:id", s.Handle(func(c *gin.Context) error {
		switch c.Param("id") {
		case "down":
			return fmt.Errorf("outbox: add events.ticket.created: %w", errDown)
		case "mapped":
			return apperr.Wrap(apperr.Conflict, errDown, "changed concurrently")
		}
		return errors.New("a bug")
	}))
	for _, tc := range []struct {
		id     string
		status int
		retry  string
		detail string
	}{
		{"down", http.StatusServiceUnavailable, "7", "the rule's answer"},
		{"mapped", http.StatusConflict, "", "changed concurrently"},
		{"bug", http.StatusInternalServerError, "", "an unexpected error occurred; quote the request id when reporting it"},
	} {
		asked = 0
		rec, p := do(t, s.Handler(), http.MethodGet, "/api/Items/"+tc.id, "", "")
		if rec.Code != tc.status || p.Status != tc.status || rec.Header().Get("Retry-After") != tc.retry || p.Detail != tc.detail {
			t.Errorf("%s: %d (problem %d, %q), Retry-After %q; want %d, %q, %q", tc.id, rec.Code, p.Status, p.Detail,
				rec.Header().Get("Retry-After"), tc.status, tc.detail, tc.retry)
		}
		if asked != 1 {
			t.Errorf("%s: the rule was asked %d times, want once", tc.id, asked)
		}
		if strings.Contains(rec.Body.String(), "SQLSTATE") || strings.Contains(rec.Body.String(), "outbox") {
			t.Errorf("%s: the body shows the error: %s", tc.id, rec.Body.String())
		}
	}
}

// Building a server leaves gin's process-wide mode as it was: that is the
// binary's choice (boot), not the library's.
func TestNewLeavesGinModeAlone(t *testing.T) {
	prev := gin.Mode()
	t.Cleanup(func() { gin.SetMode(prev) })
	gin.SetMode(gin.TestMode)
	newTestServer(t)
	if got := gin.Mode(); got != gin.TestMode {
		t.Fatalf("gin mode after New = %q, want %q (unchanged)", got, gin.TestMode)
	}
}
