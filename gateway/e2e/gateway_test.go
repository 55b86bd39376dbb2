package e2e

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/apicontract"
	"supportplatform.dev/pkg/randid"
)

// Plain HTTP must be refused on every path and method with a 403 problem,
// and the request must never reach a service: the auth service's log sees
// an HTTPS control request but none of the plain ones, and Traefik's access
// log shows each plain request answered by the https-required router
// without any upstream.
func TestPlainHTTPRefusedAndNeverProxied(t *testing.T) {
	c := client(t)
	token := c.Login(demo.Email, demo.Password)
	run := randid.Hex(6)

	tests := []struct {
		name       string
		method     string
		path       string
		body       string
		token      string
		documented bool // the route is in openapi.yaml: validate as that operation
	}{
		{name: "login with credentials", method: http.MethodPost, path: "/api/Auth/login", body: `{"email":"` + demo.Email + `","password":"` + demo.Password + `"}`, documented: true},
		{name: "me with token", method: http.MethodGet, path: "/api/Customers/me", token: token, documented: true},
		{name: "jwks odd case", method: http.MethodGet, path: "/API/auth/JWKS", documented: true},
		{name: "well-known jwks", method: http.MethodGet, path: "/.well-known/jwks.json", documented: true},
		{name: "logout", method: http.MethodPost, path: "/api/Auth/logout", token: token, documented: true},
		{name: "root", method: http.MethodGet, path: "/"},
		{name: "unknown path", method: http.MethodGet, path: "/no/such/thing"},
		{name: "delete topic", method: http.MethodDelete, path: "/api/Topics/1", token: token},
		{name: "put with body", method: http.MethodPut, path: "/api/Tickets/7", body: `{"status":"closed"}`, token: token},
		{name: "options", method: http.MethodOptions, path: "/api/Auth/login"},
		{name: "patch", method: http.MethodPatch, path: "/api/TicketMessages/1"},
		{name: "dot segments", method: http.MethodGet, path: "/api/Auth/../Customers/me", token: token},
		{name: "service health", method: http.MethodGet, path: "/healthz"},
		{name: "head", method: http.MethodHead, path: "/api/Auth/jwks"},
	}
	plain := &http.Client{
		Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("the plain-HTTP entrypoint must not redirect")
		},
	}
	var ids []string
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("plain-%s-%d", run, i)
			ids = append(ids, id)
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req, err := http.NewRequestWithContext(t.Context(), tc.method, stk.HTTPURL+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Request-ID", id)
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := plain.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()

			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("status %d, want 403: %s", resp.StatusCode, data)
			}
			if loc := resp.Header.Get("Location"); loc != "" {
				t.Errorf("Location %q: plain HTTP must not be redirected", loc)
			}
			if tc.method == http.MethodHead {
				if ct := resp.Header.Get("Content-Type"); ct != apicontract.ProblemContentType {
					t.Errorf("HEAD Content-Type %q", ct)
				}
				return
			}
			if tc.documented {
				if err := api.ValidateResponse(req, resp.StatusCode, resp.Header, data); err != nil {
					t.Error(err)
				}
			}
			if err := api.ValidateProblem(resp.StatusCode, resp.Header, data); err != nil {
				t.Fatal(err)
			}
			var p e2ekit.Problem
			if err := json.Unmarshal(data, &p); err != nil {
				t.Fatal(err)
			}
			if p.Title != "HTTPS required" || !strings.Contains(p.Detail, "HTTPS") {
				t.Errorf("problem %+v does not say that HTTPS is required", p)
			}
			if p.RequestID != id {
				t.Errorf("requestId %q, want the client's %q", p.RequestID, id)
			}
		})
	}

	// The control request over HTTPS does reach auth and its log: this is
	// what makes the absence of the plain requests below meaningful.
	control := "ctrl-" + run
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, stk.HTTPSURL+"/api/Auth/jwks", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Request-ID", control)
	if resp := c.DoRequest(req); resp.Status != http.StatusOK {
		t.Fatalf("control request: %d", resp.Status)
	}
	authLog := waitForLog(t, stk.LogFile("auth"), control)
	for _, id := range ids {
		if strings.Contains(authLog, id) {
			t.Errorf("plain-HTTP request %s reached the auth service", id)
		}
	}

	entries := waitForAccessLog(t, stk.Gateway.AccessLogFile, control)
	seen := map[string]bool{}
	for _, e := range entries {
		id := e.RequestID
		if !strings.HasPrefix(id, "plain-"+run+"-") {
			continue
		}
		seen[id] = true
		if e.RouterName != "https-required@file" || e.EntryPoint != "web" || e.ServiceURL != "" || e.DownstreamStatus != http.StatusForbidden {
			t.Errorf("access log for %s: router %q entrypoint %q upstream %q status %d; want https-required@file on web, no upstream, 403",
				id, e.RouterName, e.EntryPoint, e.ServiceURL, e.DownstreamStatus)
		}
	}
	for _, id := range ids {
		if !seen[id] {
			t.Errorf("plain-HTTP request %s missing from the gateway access log", id)
		}
	}
}

// Clients send secrets in query strings (the feedback link's token, Graph's
// validationToken): the gateway's access log keeps each request's path with
// every query value redacted, over HTTPS and plain HTTP, on routed paths and
// on paths no service owns, and never the values themselves.
func TestAccessLogRedactsQueryValues(t *testing.T) {
	secret := "s3cr3t" + randid.Hex(8)
	run := randid.Hex(4)
	tests := []struct {
		method, url, want string
	}{
		{http.MethodPost, stk.HTTPSURL + "/api/TicketMessages/1/feedback?token=" + secret + "&vote=like",
			"/api/TicketMessages/1/feedback?token=REDACTED&vote=REDACTED"},
		{http.MethodPost, stk.HTTPSURL + "/api/providerwebhook?validationToken=" + secret,
			"/api/providerwebhook?validationToken=REDACTED"},
		{http.MethodGet, stk.HTTPSURL + "/api/no/such/thing?code=" + secret, "/api/no/such/thing?code=REDACTED"},
		{http.MethodGet, stk.HTTPURL + "/api/Tickets?token=" + secret, "/api/Tickets?token=REDACTED"},
	}
	c := client(t)
	plain := &http.Client{Timeout: 10 * time.Second}
	want := map[string]string{}
	var last string
	for i, tc := range tests {
		id := fmt.Sprintf("redact-%s-%d", run, i)
		want[id], last = tc.want, id
		req, err := http.NewRequestWithContext(t.Context(), tc.method, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Request-ID", id)
		req.Header.Set("X-Log-Path", "/spoofed?token="+secret)
		hc := plain
		if strings.HasPrefix(tc.url, "https:") {
			hc = c.HTTP // the answers (a 404 problem for an unowned path) are not the point here
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	entries := waitForAccessLog(t, stk.Gateway.AccessLogFile, last)
	for _, e := range entries {
		w, ok := want[e.RequestID]
		if !ok {
			continue
		}
		delete(want, e.RequestID)
		if e.LogPath != w || e.RequestPath != "" {
			t.Errorf("access log of %s: path %q, RequestPath %q; want path %q and no RequestPath", e.RequestID, e.LogPath, e.RequestPath, w)
		}
	}
	if len(want) > 0 {
		t.Errorf("requests missing from the access log: %v", want)
	}
	data, err := os.ReadFile(stk.Gateway.AccessLogFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), secret) {
		t.Errorf("the access log holds a query value")
	}
}

// Prefixes are matched case-insensitively at the gateway (the service then
// matches its own routes case-insensitively too).
func TestGatewayPathsAreCaseInsensitive(t *testing.T) {
	c := client(t)
	for _, p := range []string{"/api/Auth/jwks", "/api/auth/jwks", "/API/AUTH/JWKS", "/Api/aUtH/JwKs", "/.well-known/jwks.json", "/.WELL-KNOWN/JWKS.JSON"} {
		t.Run(p, func(t *testing.T) {
			resp := c.Do(http.MethodGet, p, "", nil)
			if resp.Status != http.StatusOK {
				t.Fatalf("GET %s: %d %s", p, resp.Status, resp.Body)
			}
		})
	}
	token := c.Login(demo.Email, demo.Password)
	for _, p := range []string{"/api/Customers/me", "/API/CUSTOMERS/ME", "/api/customers/Me"} {
		t.Run(p, func(t *testing.T) {
			resp := c.Do(http.MethodGet, p, token, nil)
			if resp.Status != http.StatusOK {
				t.Fatalf("GET %s: %d %s", p, resp.Status, resp.Body)
			}
			var me struct {
				Account struct {
					Email string `json:"email"`
				} `json:"account"`
			}
			resp.JSON(t, &me)
			if me.Account.Email != demo.Email {
				t.Errorf("account %q, want %q", me.Account.Email, demo.Email)
			}
		})
	}

	// A prefix only matches whole segments: /api/AuthX belongs to no
	// service, so Traefik itself answers 404 and nothing is proxied.
	resp, err := stk.HTTPClient().Get(stk.HTTPSURL + "/api/AuthX/jwks")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/api/AuthX/jwks: %d, want 404", resp.StatusCode)
	}
}

// TLS: only clients trusting the dev CA connect, TLS 1.2 is the floor, and
// HTTP/2 is offered.
func TestGatewayTLS(t *testing.T) {
	ctx := t.Context()
	u := strings.TrimPrefix(stk.HTTPSURL, "https://")

	// A client with the system roots refuses the dev certificate.
	_, err := http.Get(stk.HTTPSURL + "/api/Auth/jwks")
	var verr *tls.CertificateVerificationError
	if !errors.As(err, &verr) {
		t.Errorf("client without the dev CA: %v, want a certificate verification error", err)
	}

	// TLS 1.1 is refused.
	d := tls.Dialer{Config: &tls.Config{RootCAs: stk.TLS.CAPool, MaxVersion: tls.VersionTLS11, MinVersion: tls.VersionTLS10}}
	if conn, err := d.DialContext(ctx, "tcp", u); err == nil {
		conn.Close()
		t.Error("TLS 1.1 handshake succeeded")
	}

	// The certificate is valid for localhost and the loopback address.
	for _, name := range []string{"localhost", "127.0.0.1"} {
		d := tls.Dialer{Config: &tls.Config{RootCAs: stk.TLS.CAPool, ServerName: name, NextProtos: []string{"h2", "http/1.1"}}}
		conn, err := d.DialContext(ctx, "tcp", u)
		if err != nil {
			t.Errorf("handshake as %s: %v", name, err)
			continue
		}
		st := conn.(*tls.Conn).ConnectionState()
		if st.Version < tls.VersionTLS12 || st.NegotiatedProtocol != "h2" {
			t.Errorf("%s: version %x, ALPN %q", name, st.Version, st.NegotiatedProtocol)
		}
		conn.Close()
	}

	// Plain HTTP spoken to the TLS port gets no API answer.
	conn, err := net.DialTimeout("tcp", u, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "GET /api/Auth/jwks HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
	answer, _ := io.ReadAll(conn)
	if strings.Contains(string(answer), `"keys"`) {
		t.Errorf("plain HTTP on the TLS port was served: %q", answer)
	}
}

// The per-client-IP rate limit answers 429 with Retry-After once the burst
// is spent, without passing the request on, while another client IP keeps
// its own budget. It runs on a second Traefik rendered from the same
// templates, with a tiny limit, in front of a static handler, so that the
// main stack's limit can stay out of the other tests' way.
func TestGatewayRateLimit(t *testing.T) {
	var hits atomic.Int64
	var lastForwarded atomic.Value
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		lastForwarded.Store([3]string{r.Header.Get("X-Forwarded-For"), r.Header.Get("X-Real-Ip"), r.Header.Get("X-Forwarded-Proto")})
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	defer upstream.Close()

	const burst = 3
	gw, err := stack.StartGateway(t.Context(), stack.GatewayOptions{
		RepoRoot:   repoRoot,
		TraefikBin: filepath.Join(binDir, "traefik"),
		Dir:        t.TempDir(),
		Routes: []stack.Route{{
			Name: "static",
			Rule: "PathRegexp(`" + stack.PrefixRegexp("/api/Static") + "`)",
			URL:  upstream.URL,
		}},
		// One request a minute: after the burst nothing refills during the
		// test, so exactly `burst` requests pass.
		RateLimit: stack.RateLimit{Average: 1, Period: time.Minute, Burst: burst},
		TLS:       stk.TLS,
		LogName:   "traefik-ratelimit",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := gw.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()

	var lastBody []byte
	get := func(hc *http.Client) *http.Response {
		t.Helper()
		resp, err := hc.Get(gw.HTTPSURL + "/API/static/x")
		if err != nil {
			t.Fatal(err)
		}
		lastBody, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp
	}

	hc := stk.HTTPClient()
	// A client-chosen X-Forwarded-For must neither be trusted for the
	// limit nor reach the service: Traefik replaces it with the peer.
	spoofing := &http.Client{Transport: headerTransport{base: hc.Transport, header: "X-Forwarded-For", value: "203.0.113.9"}}
	var statuses []int
	for range burst + 4 {
		resp := get(spoofing)
		statuses = append(statuses, resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests {
			ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
			if err != nil || ra < 1 {
				t.Errorf("429 Retry-After %q", resp.Header.Get("Retry-After"))
			}
			// The gateway's own 429 has the same problem shape as every error.
			if err := api.ValidateProblem(resp.StatusCode, resp.Header, lastBody); err != nil {
				t.Errorf("gateway 429: %v", err)
			}
		}
	}
	for i, s := range statuses {
		want := http.StatusOK
		if i >= burst {
			want = http.StatusTooManyRequests
		}
		if s != want {
			t.Errorf("statuses %v: request %d got %d, want %d", statuses, i, s, want)
			break
		}
	}
	if got := hits.Load(); got != burst {
		t.Errorf("upstream saw %d requests, want %d (throttled requests must not pass)", got, burst)
	}
	fwd, _ := lastForwarded.Load().([3]string)
	if fwd[0] != "127.0.0.1" || fwd[1] != "127.0.0.1" || fwd[2] != "https" {
		t.Errorf("upstream saw X-Forwarded-For %q, X-Real-Ip %q, X-Forwarded-Proto %q; want the peer 127.0.0.1 and https", fwd[0], fwd[1], fwd[2])
	}

	// Another client address has its own bucket.
	other := hc.Transport.(*http.Transport).Clone()
	other.DialContext = (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext
	if resp := get(&http.Client{Transport: other}); resp.StatusCode != http.StatusOK {
		t.Errorf("second client IP: %d, want 200", resp.StatusCode)
	}
}

type headerTransport struct {
	base          http.RoundTripper
	header, value string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.header, h.value)
	return h.base.RoundTrip(r)
}

type accessLogEntry struct {
	RequestID        string `json:"request_X-Request-Id"`
	LogPath          string `json:"request_X-Log-Path"`
	RequestPath      string `json:"RequestPath"`
	RouterName       string `json:"RouterName"`
	EntryPoint       string `json:"entryPointName"`
	ServiceURL       string `json:"ServiceURL"`
	DownstreamStatus int    `json:"DownstreamStatus"`
}

// waitForLog polls a log file until it contains marker and returns it.
func waitForLog(t *testing.T, path, marker string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, _ := os.ReadFile(path)
		if strings.Contains(string(data), marker) {
			return string(data)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never logged %q", path, marker)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitForAccessLog waits for the entry with request id marker (access logs
// are buffered) and returns every entry.
func waitForAccessLog(t *testing.T, path, marker string) []accessLogEntry {
	t.Helper()
	waitForLog(t, path, marker)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var entries []accessLogEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		var e accessLogEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("access log line is not JSON: %q", sc.Text())
		}
		entries = append(entries, e)
	}
	return entries
}

// A service that is down gets the client a problem too, not Traefik's bare
// "Bad Gateway".
func TestGatewayBackendDownIsProblem(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there any more
	gw, err := stack.StartGateway(t.Context(), stack.GatewayOptions{
		RepoRoot:   repoRoot,
		TraefikBin: filepath.Join(binDir, "traefik"),
		Dir:        t.TempDir(),
		Routes:     []stack.Route{{Name: "dead", Rule: "PathRegexp(`" + stack.PrefixRegexp("/api/Dead") + "`)", URL: deadURL}},
		RateLimit:  stack.RateLimit{Average: 100, Period: time.Second, Burst: 100},
		TLS:        stk.TLS,
		LogName:    "traefik-dead",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := gw.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	resp, err := stk.HTTPClient().Get(gw.HTTPSURL + "/api/Dead/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway && resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d %s", resp.StatusCode, body)
	}
	if err := api.ValidateProblem(resp.StatusCode, resp.Header, body); err != nil {
		t.Fatal(err)
	}
}

// A path no service owns is a 404 problem from the gateway, whatever the
// method, and does not close the connection. Outside the API's namespaces
// the console answers (its pages); the services' own endpoints are never
// routed.
func TestGatewayUnknownPathIsProblem(t *testing.T) {
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/api"},
		{http.MethodGet, "/API/nowhere"},
		{http.MethodPost, "/api/Nothing/here"},
		{http.MethodDelete, "/api/AuthX"},
		{http.MethodGet, "/.well-known/nothing"},
		{http.MethodGet, "/metrics"},
		{http.MethodGet, "/healthz"},
		{http.MethodGet, "/readyz"},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), tc.method, stk.HTTPSURL+tc.path, nil)
		resp, err := stk.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || resp.Close {
			t.Fatalf("%s %s: %d close=%v %s", tc.method, tc.path, resp.StatusCode, resp.Close, body)
		}
		if err := api.ValidateProblem(resp.StatusCode, resp.Header, body); err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
	}
}
