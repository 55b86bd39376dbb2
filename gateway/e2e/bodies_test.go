package e2e

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/pkg/config"
)

// maxBodyBytes is the MAX_BODY_BYTES the stack's services run with: the
// value given to the stack, else the configuration default.
func maxBodyBytes(t *testing.T) int64 {
	t.Helper()
	env := map[string]string{}
	for _, kv := range stk.ServiceEnv("auth") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	var common config.Common
	if err := config.Load(func(k string) string { return env[k] }, &common); err != nil {
		t.Fatal(err)
	}
	if common.MaxBodyBytes <= 0 {
		t.Fatalf("MAX_BODY_BYTES %d", common.MaxBodyBytes)
	}
	return common.MaxBodyBytes
}

// naiveTLSRequest opens a fresh TLS connection to the gateway, writes the
// whole request (headers, then every byte of the body) before reading
// anything, as most HTTP libraries do, and reads one response. An error
// means the client saw the connection end without an answer.
func naiveTLSRequest(t *testing.T, method, path, token string, body []byte, chunked bool) (*http.Response, []byte, error) {
	t.Helper()
	addr := strings.TrimPrefix(stk.HTTPSURL, "https://")
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: stk.TLS.CAPool, MinVersion: tls.VersionTLS12, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	var w bytes.Buffer
	fmt.Fprintf(&w, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nUser-Agent: naive-e2e\r\n", method, path, addr)
	if token != "" {
		fmt.Fprintf(&w, "Authorization: Bearer %s\r\n", token)
	}
	if chunked {
		w.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		for rest := body; len(rest) > 0; {
			n := min(len(rest), 16<<10)
			fmt.Fprintf(&w, "%x\r\n%s\r\n", n, rest[:n])
			rest = rest[n:]
		}
		w.WriteString("0\r\n\r\n")
	} else {
		fmt.Fprintf(&w, "Content-Length: %d\r\n\r\n", len(body))
		w.Write(body)
	}
	// Paced like an uplink of about 1 MB/s: on loopback the kernel buffers
	// would swallow a whole body at once and hide a server that answers
	// before reading it and then closes (net/http waits 500 ms before the
	// close that resets a connection with unread data).
	for rest := w.Bytes(); len(rest) > 0; {
		n := min(len(rest), 32<<10)
		if _, err := conn.Write(rest[:n]); err != nil {
			return nil, nil, fmt.Errorf("write: %w", err)
		}
		rest = rest[n:]
		time.Sleep(30 * time.Millisecond)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
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

// A body over MAX_BODY_BYTES is answered 413 problem+json through the
// gateway, even to a client that sends all of it before reading, on every
// owned route; a path no service owns answers its 404 problem whatever the
// body's size (the path is the first thing wrong: a smaller body would not
// help). No request may see the connection closed without an answer.
func TestOversizedBodiesThroughGateway(t *testing.T) {
	c := client(t)
	token := c.Login(demo.Email, demo.Password)
	limit := maxBodyBytes(t)
	// A valid JSON object a bit over the limit.
	body := []byte(`{"name":"` + strings.Repeat("x", int(limit)+8<<10) + `"}`)

	routes := []struct {
		method, path string
		token        string
		status       int
	}{
		{http.MethodPost, "/api/Topics", token, http.StatusRequestEntityTooLarge},
		{http.MethodPut, "/api/Topics/1", token, http.StatusRequestEntityTooLarge},
		{http.MethodPost, "/api/Auth/login", "", http.StatusRequestEntityTooLarge},
		{http.MethodPost, "/api/Translations/translate", token, http.StatusRequestEntityTooLarge},
		{http.MethodPost, "/api/Accounts", token, http.StatusRequestEntityTooLarge},
		{http.MethodPut, "/api/no/service/owns/this", token, http.StatusNotFound},
		{http.MethodPost, "/api/NoSuchThing", "", http.StatusNotFound},
	}
	n := 0 // 28 requests, each on its own connection
	for round := range 4 {
		for _, rt := range routes {
			// Content-Length on even rounds, chunked on odd ones.
			chunked := round%2 == 1
			n++
			name := fmt.Sprintf("%d %s %s chunked=%v", n, rt.method, rt.path, chunked)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				resp, data, err := naiveTLSRequest(t, rt.method, rt.path, rt.token, body, chunked)
				if err != nil {
					t.Fatalf("no answer: %v", err)
				}
				if resp.StatusCode != rt.status {
					t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, rt.status, data)
				}
				if err := api.ValidateProblem(resp.StatusCode, resp.Header, data); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// Just under the limit the same routes read the body: the answer is the
// route's own (here a 400 for the wrong fields, or 401 for a wrong login),
// never a 413, so the limit tested above is the configured one.
func TestBodyAtLimitIsRead(t *testing.T) {
	limit := maxBodyBytes(t)
	pad := int(limit) - len(`{"email":"a@example.com","password":"`) - len(`"}`)
	body := []byte(`{"email":"a@example.com","password":"` + strings.Repeat("p", pad) + `"}`)
	if int64(len(body)) != limit {
		t.Fatalf("body %d bytes, want %d", len(body), limit)
	}
	resp, data, err := naiveTLSRequest(t, http.MethodPost, "/api/Auth/login", "", body, false)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	if resp.StatusCode == http.StatusRequestEntityTooLarge || resp.StatusCode >= 500 {
		t.Fatalf("a body of exactly MAX_BODY_BYTES (%s bytes) got %d: %.300s", strconv.FormatInt(limit, 10), resp.StatusCode, data)
	}
	if err := api.ValidateProblem(resp.StatusCode, resp.Header, data); err != nil {
		t.Fatal(err)
	}
}
