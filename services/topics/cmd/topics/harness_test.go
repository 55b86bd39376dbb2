package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/postgres/pgtest"
)

const (
	testIssuer   = "test-issuer"
	testAudience = "test-audience"
	testKID      = "test-key"
)

// service is one running topics binary (run() in-process) with its own
// database, NATS server, Redis key prefix and JWKS.
type service struct {
	base       string
	key        ed25519.PrivateKey
	natsURL    string
	natsPrefix string
	http       *http.Client
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func startService(t *testing.T) *service {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(authn.JWKS{Keys: []authn.JWK{authn.PublicJWK(testKID, pub)}})
	}))
	t.Cleanup(jwks.Close)

	redisURL := os.Getenv("TEST_REDIS_URL")
	if redisURL == "" {
		redisURL = "redis://127.0.0.1:6379/0"
	}
	suffix := randomHex(4)
	svc := &service{key: priv, natsURL: natstest.Start(t), natsPrefix: "topicstest" + suffix,
		http: &http.Client{Timeout: 10 * time.Second}}
	env := map[string]string{
		"HTTP_ADDR":     "127.0.0.1:0",
		"DATABASE_URL":  pgtest.NewDatabase(t),
		"REDIS_URL":     redisURL,
		"REDIS_PREFIX":  "topicstest:" + suffix + ":",
		"NATS_URL":      svc.natsURL,
		"NATS_PREFIX":   svc.natsPrefix,
		"AUTH_JWKS_URL": jwks.URL,
		"JWT_ISSUER":    testIssuer,
		"JWT_AUDIENCE":  testAudience,
		"LOG_LEVEL":     "warn",
	}

	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"topics"}, func(k string) string { return env[k] }, pw)
		_ = pw.CloseWithError(io.EOF)
		done <- err
	}()
	addr := make(chan string, 1)
	var logs strings.Builder
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if a, ok := strings.CutPrefix(line, "listening on "); ok {
				addr <- a
				continue
			}
			logs.WriteString(line + "\n")
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run returned %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("run did not shut down")
		}
		<-logsDone
		if t.Failed() {
			t.Logf("service logs:\n%s", logs.String())
		}
	})

	select {
	case a := <-addr:
		svc.base = "http://" + a
	case err := <-done:
		t.Fatalf("run ended before listening: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("service did not start")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := svc.http.Get(svc.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("service not ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return svc
}

var accountSeq atomic.Int64

// token signs an access token for a customer the way the auth service does.
func (s *service) token(t *testing.T, customerID int64, mutate ...func(*authn.Claims, *jwt.Token)) string {
	t.Helper()
	now := time.Now()
	claims := authn.Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    testIssuer,
			Subject:   strconv.FormatInt(accountSeq.Add(1), 10),
			Audience:  jwt.ClaimStrings{testAudience},
			ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)),
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ID:        randomHex(16),
		},
		CustomerID: customerID,
		Role:       authn.RoleAdmin,
		IssuedAtMs: now.UnixMilli(),
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, &claims)
	tok.Header["kid"] = testKID
	for _, m := range mutate {
		m(&claims, tok)
	}
	raw, err := tok.SignedString(s.key)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// client calls the service as one customer.
type client struct {
	t     *testing.T
	s     *service
	token string
	// offContract marks requests deliberately outside the documented API
	// (unknown paths, methods); all others are checked against the fragment.
	offContract bool
}

func (c client) undocumented() client { c.offContract = true; return c }

var customerSeq atomic.Int64

// newCustomer returns a client for a fresh customer id, so subtests do not
// see each other's records.
func (s *service) newCustomer(t *testing.T) client {
	return client{t: t, s: s, token: s.token(t, 1000+customerSeq.Add(1))}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// rawBody is sent as is with the given content type.
type rawBody struct {
	contentType string
	data        string
}

func (c client) do(method, path string, body any) response {
	c.t.Helper()
	var rd io.Reader
	ct := ""
	switch b := body.(type) {
	case nil:
	case rawBody:
		rd, ct = strings.NewReader(b.data), b.contentType
	case string:
		rd, ct = strings.NewReader(b), "application/json"
	default:
		data, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd, ct = bytes.NewReader(data), "application/json"
	}
	req, err := http.NewRequest(method, c.s.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.s.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode >= 500 {
		c.t.Errorf("%s %s answered %d: %s", method, path, resp.StatusCode, data)
	}
	if !c.offContract {
		if err := loadContract(c.t).ValidateResponse(req, resp.StatusCode, resp.Header, data); err != nil {
			c.t.Errorf("contract: %v", err)
		}
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

func (c client) get(path string) response { c.t.Helper(); return c.do(http.MethodGet, path, nil) }
func (c client) post(path string, body any) response {
	c.t.Helper()
	return c.do(http.MethodPost, path, body)
}
func (c client) put(path string, body any) response {
	c.t.Helper()
	return c.do(http.MethodPut, path, body)
}
func (c client) del(path string) response { c.t.Helper(); return c.do(http.MethodDelete, path, nil) }

// expect checks the status and decodes a JSON body into out (when not nil).
func (r response) expect(t *testing.T, status int, out any) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if out != nil {
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("content type %q", ct)
		}
		dec := json.NewDecoder(bytes.NewReader(r.body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(out); err != nil {
			t.Fatalf("decode %s: %v", r.body, err)
		}
	}
	return r
}

// problem is the RFC 9457 body.
type problem struct {
	Type      string            `json:"type"`
	Title     string            `json:"title"`
	Status    int               `json:"status"`
	Detail    string            `json:"detail"`
	Instance  string            `json:"instance"`
	RequestID string            `json:"requestId"`
	Errors    map[string]string `json:"errors"`
}

// expectProblem checks a problem answer with status and that its errors map
// holds exactly the given fields (none given: any).
func (r response) expectProblem(t *testing.T, status int, fields ...string) problem {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("content type %q, want application/problem+json", ct)
	}
	var p problem
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("decode problem %s: %v", r.body, err)
	}
	if p.Status != status || p.Title == "" || p.Type == "" || p.RequestID == "" {
		t.Fatalf("problem = %+v", p)
	}
	if len(fields) > 0 {
		if len(p.Errors) != len(fields) {
			t.Fatalf("errors = %v, want fields %v", p.Errors, fields)
		}
		for _, f := range fields {
			if p.Errors[f] == "" {
				t.Fatalf("errors = %v, want field %s", p.Errors, f)
			}
		}
	}
	return p
}

func path(base string, id int64, query ...string) string {
	p := base + "/" + strconv.FormatInt(id, 10)
	if len(query) > 0 {
		p += "?" + strings.Join(query, "&")
	}
	return p
}

func jsonStr(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func itoa(n int64) string { return fmt.Sprint(n) }
