package httpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apperr"
)

const testLimit = 1 << 20

// newLimitServer serves the test routes behind a real net/http server with a
// 1 MiB body limit, as a service runs.
func newLimitServer(t *testing.T) string {
	t.Helper()
	s, err := New(Options{Service: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxBodyBytes: testLimit})
	if err != nil {
		t.Fatal(err)
	}
	s.Engine.POST("/api/Items", s.Handle(func(c *gin.Context) error {
		var v map[string]any
		if err := BindJSON(c, &v); err != nil {
			return err
		}
		c.JSON(http.StatusCreated, gin.H{"keys": len(v)})
		return nil
	}))
	// A route that refuses before reading the body, as an auth middleware does.
	s.Engine.PUT("/api/Items/:id", s.Handle(func(c *gin.Context) error {
		_, err := PathID(c)
		return err
	}))
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// jsonBody is a JSON object of exactly size bytes.
func jsonBody(size int) []byte {
	const head, tail = `{"name":"`, `"}`
	return []byte(head + strings.Repeat("x", size-len(head)-len(tail)) + tail)
}

// naiveRequest writes the whole request (headers, then the body, chunked or
// with a Content-Length) before reading anything, as most HTTP libraries do,
// then reads one response.
func naiveRequest(conn net.Conn, br *bufio.Reader, method, path string, body []byte, chunked bool) (*http.Response, []byte, error) {
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	var w bytes.Buffer
	fmt.Fprintf(&w, "%s %s HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n", method, path)
	if chunked {
		w.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		for rest := body; len(rest) > 0; {
			n := min(len(rest), 32<<10)
			fmt.Fprintf(&w, "%x\r\n%s\r\n", n, rest[:n])
			rest = rest[n:]
		}
		w.WriteString("0\r\n\r\n")
	} else {
		fmt.Fprintf(&w, "Content-Length: %d\r\n\r\n", len(body))
		w.Write(body)
	}
	if _, err := conn.Write(w.Bytes()); err != nil {
		return nil, nil, fmt.Errorf("write: %w", err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("read response: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("read response body: %w", err)
	}
	return resp, data, nil
}

func TestOversizedBodiesAnsweredToNaiveClients(t *testing.T) {
	addr := newLimitServer(t)
	cases := []struct {
		name    string
		method  string
		path    string
		size    int
		chunked bool
		status  int
	}{
		{"content-length just over", http.MethodPost, "/api/Items", testLimit + 1, false, 413},
		{"content-length 1 KiB over", http.MethodPost, "/api/Items", testLimit + 1024, false, 413},
		{"content-length 3 MiB", http.MethodPost, "/api/Items", 3 << 20, false, 413},
		{"chunked just over", http.MethodPost, "/api/Items", testLimit + 1, true, 413},
		{"chunked 1 KiB over", http.MethodPost, "/api/Items", testLimit + 1024, true, 413},
		{"chunked 3 MiB", http.MethodPost, "/api/Items", 3 << 20, true, 413},
		{"chunked refused before reading", http.MethodPut, "/api/Items/x", testLimit + 1024, true, 400},
		{"content-length at the limit is read", http.MethodPost, "/api/Items", testLimit, false, 201},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := jsonBody(tc.size)
			// A reset only loses the answer sometimes: try several times.
			for i := range 8 {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				br := bufio.NewReader(conn)
				resp, data, err := naiveRequest(conn, br, tc.method, tc.path, body, tc.chunked)
				if err != nil {
					conn.Close()
					t.Fatalf("try %d: no answer: %v", i, err)
				}
				if resp.StatusCode != tc.status {
					t.Fatalf("try %d: status %d, want %d: %s", i, resp.StatusCode, tc.status, data)
				}
				if tc.status >= 400 {
					if ct := resp.Header.Get("Content-Type"); ct != ProblemContentType {
						t.Fatalf("content type %q", ct)
					}
					var p Problem
					if err := json.Unmarshal(data, &p); err != nil || p.Status != tc.status {
						t.Fatalf("problem %q: %v", data, err)
					}
				}
				// The body was drained: the connection serves the next request.
				if resp.Close {
					t.Fatalf("try %d: connection closed after a drained body", i)
				}
				resp, _, err = naiveRequest(conn, br, http.MethodPost, "/api/Items", []byte(`{"a":1}`), false)
				conn.Close()
				if err != nil || resp.StatusCode != http.StatusCreated {
					t.Fatalf("try %d: reuse after the answer: %v %v", i, resp, err)
				}
			}
		})
	}
}

// A body larger than DrainBytes beyond the limit is not read: the answer is
// still a 413 problem, and it ends the connection. A client that reads while
// it sends (Go's) gets it.
func TestHugeBodyClosesAfterAnswer(t *testing.T) {
	addr := newLimitServer(t)
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			size := int64(testLimit + DrainBytes + 1<<20)
			var body io.Reader = io.MultiReader(strings.NewReader(`{"name":"`), io.LimitReader(repeatReader('x'), size))
			req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/api/Items", body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if !chunked {
				req.ContentLength = size + int64(len(`{"name":"`))
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get("Content-Type") != ProblemContentType {
				t.Fatalf("status %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			if !resp.Close {
				t.Fatal("a body over the drain bound must end the connection")
			}
		})
	}
}

// A client that asked "Expect: 100-continue" is refused without being asked
// for its body.
func TestTooLargeWithExpectContinue(t *testing.T) {
	addr := newLimitServer(t)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "POST /api/Items HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", testLimit+1)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close {
		t.Fatalf("status %d close %v", resp.StatusCode, resp.Close)
	}
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// A route with its own limit takes bodies over MaxBodyBytes up to that
// limit, and refuses more (declared or not); the other routes keep the
// default.
func TestRouteBodyLimit(t *testing.T) {
	s, err := New(Options{Service: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxBodyBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	read := s.Handle(func(c *gin.Context) error {
		n, err := io.Copy(io.Discard, c.Request.Body)
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apperr.E(apperr.TooLarge, "over %d", mbe.Limit)
		}
		if err != nil {
			return err
		}
		c.JSON(http.StatusOK, gin.H{"read": n})
		return nil
	})
	s.Engine.POST("/api/Items/:id/files", read)
	s.Engine.POST("/api/Items", read)
	s.SetBodyLimit(http.MethodPost, "/api/Items/:id/files", 5000)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name    string
		path    string
		size    int
		chunked bool
		want    int
	}{
		{"own limit, under", "/api/items/7/FILES", 5000, false, http.StatusOK},
		{"own limit, under, chunked", "/api/Items/7/files", 5000, true, http.StatusOK},
		{"own limit, over", "/api/Items/7/files", 5001, false, http.StatusRequestEntityTooLarge},
		{"own limit, over, chunked", "/api/Items/7/files", 5001, true, http.StatusRequestEntityTooLarge},
		{"default route", "/api/Items", 1001, false, http.StatusRequestEntityTooLarge},
		{"default route, chunked", "/api/Items", 1001, true, http.StatusRequestEntityTooLarge},
		{"default route, under", "/api/Items", 1000, false, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = bytes.NewReader(make([]byte, tc.size))
			if tc.chunked {
				body = io.MultiReader(body) // no length: sent chunked
			}
			req, err := http.NewRequest(http.MethodPost, srv.URL+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}
