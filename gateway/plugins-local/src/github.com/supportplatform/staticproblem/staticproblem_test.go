package staticproblem

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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

// A client that writes its whole body before reading (most do) must get the
// answer: the body is read first, up to DrainBytes.
func TestDrainsBodyBeforeAnswering(t *testing.T) {
	cfg := CreateConfig()
	cfg.Status, cfg.Title, cfg.CloseConnection = 404, "Not Found", false
	cfg.DrainBytes = 2 << 20
	h, err := New(context.Background(), nil, cfg, "nf")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := strings.Repeat("x", 3<<19) // 1.5 MiB: beyond net/http's own 256 KiB discard
	tests := []struct {
		name    string
		chunked bool
	}{
		{"content-length", false},
		{"chunked", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < 8; i++ {
				conn, err := net.Dial("tcp", srv.Listener.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
				var req bytes.Buffer
				req.WriteString("POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")
				if tc.chunked {
					fmt.Fprintf(&req, "Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(body), body)
				} else {
					fmt.Fprintf(&req, "Content-Length: %d\r\n\r\n%s", len(body), body)
				}
				if _, err := conn.Write(req.Bytes()); err != nil {
					t.Fatalf("try %d: write: %v", i, err)
				}
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				conn.Close()
				if err != nil {
					t.Fatalf("try %d: no answer: %v", i, err)
				}
				if resp.StatusCode != 404 || resp.Close || resp.Header.Get("Content-Type") != "application/problem+json" {
					t.Fatalf("try %d: %d close=%v %v", i, resp.StatusCode, resp.Close, resp.Header)
				}
			}
		})
	}
}

func TestClosesAfterBodyOverDrainBound(t *testing.T) {
	cfg := CreateConfig()
	cfg.Status, cfg.Title, cfg.CloseConnection = 404, "Not Found", false
	cfg.DrainBytes = 1024
	h, err := New(context.Background(), nil, cfg, "nf")
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int64{1025, -1} {
		req := httptest.NewRequest(http.MethodPost, "/nowhere", strings.NewReader(strings.Repeat("x", 4096)))
		req.ContentLength = size
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 404 || rec.Header().Get("Connection") != "close" {
			t.Fatalf("length %d: %d %v", size, rec.Code, rec.Header())
		}
	}
	cfg.DrainBytes = -1
	if _, err := New(context.Background(), nil, cfg, "bad"); err == nil {
		t.Fatal("a negative drainBytes must be refused")
	}
}
