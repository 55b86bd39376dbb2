package boot

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// serveReadyz starts a server answering /readyz with status and returns its
// address as HTTP_ADDR would give it (wildcard host, so the check has to
// find the loopback itself).
func serveReadyz(t *testing.T, handler http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return ":" + port
}

func TestHealthcheck(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		wantErr string // "" = ready
	}{
		{name: "ready", status: http.StatusOK, body: `{"status":"ready"}`},
		{name: "not ready", status: http.StatusServiceUnavailable, body: `{"status":"not ready","checks":{"postgres":"down"}}`, wantErr: "503 Service Unavailable"},
		{name: "server error", status: http.StatusInternalServerError, wantErr: "500"},
		{name: "redirect is not ready", status: http.StatusFound, wantErr: "302"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotPath string
			addr := serveReadyz(t, func(w http.ResponseWriter, r *http.Request) {
				gotPath = r.URL.Path
				if tt.status == http.StatusFound {
					http.Redirect(w, r, "/healthz", tt.status)
					return
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			})
			var out bytes.Buffer
			err := Healthcheck(t.Context(), addr, &out)
			if gotPath != "/readyz" {
				t.Errorf("asked %q, want /readyz", gotPath)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Healthcheck: %v", err)
				}
				if !strings.Contains(out.String(), "ready") {
					t.Errorf("stdout %q", out.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Healthcheck = %v, want an error with %q", err, tt.wantErr)
			}
			if tt.body != "" && !strings.Contains(err.Error(), "postgres") {
				t.Errorf("error %q does not carry the body that names the failing check", err)
			}
		})
	}
}

func TestHealthcheckUnreachableFailsFast(t *testing.T) {
	// A port that was just free: nothing listens there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()

	start := time.Now()
	err = Healthcheck(t.Context(), addr, &bytes.Buffer{})
	if err == nil {
		t.Fatal("Healthcheck of a closed port succeeded")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("refused connection took %v", d)
	}
}

func TestHealthcheckHungServerTimesOut(t *testing.T) {
	release := make(chan struct{})
	addr := serveReadyz(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)

	start := time.Now()
	err := Healthcheck(t.Context(), addr, &bytes.Buffer{})
	if err == nil {
		t.Fatal("Healthcheck of a hung server succeeded")
	}
	if d := time.Since(start); d < HealthcheckTimeout/2 || d > HealthcheckTimeout+time.Second {
		t.Errorf("hung server: gave up after %v, want about %v", d, HealthcheckTimeout)
	}
}

func TestHealthcheckURL(t *testing.T) {
	tests := []struct {
		addr, want string
	}{
		{":8080", "http://127.0.0.1:8080/readyz"},
		{"0.0.0.0:8080", "http://127.0.0.1:8080/readyz"},
		{"[::]:8080", "http://127.0.0.1:8080/readyz"},
		{"127.0.0.1:8081", "http://127.0.0.1:8081/readyz"},
		{"[::1]:8081", "http://[::1]:8081/readyz"},
		{"localhost:8089", "http://localhost:8089/readyz"},
		{"8080", ""},      // no host:port
		{":0", ""},        // a test's port 0: nothing fixed to check
		{"", ""},          // unset and no default
		{"host:", ""},     // empty port
		{"a:b:8080", ""},  // malformed
		{"[::1]8080", ""}, // malformed
	}
	for _, tt := range tests {
		got, err := healthcheckURL(tt.addr)
		if tt.want == "" {
			if err == nil {
				t.Errorf("healthcheckURL(%q) = %q, want an error", tt.addr, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("healthcheckURL(%q) = %q, %v; want %q", tt.addr, got, err, tt.want)
		}
	}
}

func TestCommandKnowsHealthcheck(t *testing.T) {
	for _, args := range [][]string{{"auth", "healthcheck"}, {"translation", "healthcheck"}} {
		if cmd, err := Command(args); err != nil || cmd != "healthcheck" {
			t.Errorf("Command(%v) = %q, %v", args, cmd, err)
		}
	}
	if _, err := Command([]string{"auth", "healthchek"}); err == nil || !strings.Contains(err.Error(), "healthcheck") {
		t.Errorf("a typo is refused naming the known commands: %v", err)
	}
}
