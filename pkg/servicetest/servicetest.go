// Package servicetest is the one harness for running a service in its own
// tests: it calls the binary's run function in-process on port 0 with a fresh
// PostgreSQL database, an in-process NATS server, a unique Redis prefix and a
// JWKS it controls, waits for /readyz, and on cleanup stops it and checks that
// run returned cleanly. The whole stack behind the gateway is deploy/stack's
// job (gateway/e2e); this is for what only a single process shows.
package servicetest

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/pkg/redistest"
)

// Run is a binary's run function (main calls it).
type Run func(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error

// Token claims every test token carries.
const (
	Issuer   = "servicetest-issuer"
	Audience = "servicetest-audience"
	KeyID    = "servicetest-key"
)

// Options of Start.
type Options struct {
	// Args are run's arguments; default: the service name alone (serve).
	Args []string
	// Env overrides the harness's environment (see Env).
	Env map[string]string
	// NoDatabase: the service has no schema (translation).
	NoDatabase bool
	// Context is the parent of run's context (a signal.NotifyContext in a
	// shutdown test); default context.Background().
	Context context.Context
}

// Service is a running service.
type Service struct {
	Name string
	URL  string // http://127.0.0.1:port
	Env  map[string]string
	key  ed25519.PrivateKey

	cancel context.CancelFunc
	done   chan error
	logs   *syncBuffer

	mu       sync.Mutex
	finished bool
	runErr   error
}

// Env is the environment a service gets: a fresh database (unless noDB), an
// in-process NATS server with a unique prefix, a unique Redis prefix, a JWKS
// server for key, quiet logs and port 0.
func Env(t testing.TB, name string, key ed25519.PublicKey, noDB bool) map[string]string {
	t.Helper()
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(authn.JWKS{Keys: []authn.JWK{authn.PublicJWK(KeyID, key)}})
	}))
	t.Cleanup(jwks.Close)
	id := randid.Hex(5)
	env := map[string]string{
		"HTTP_ADDR":     "127.0.0.1:0",
		"REDIS_URL":     redistest.URL(),
		"REDIS_PREFIX":  name + "test:" + id + ":",
		"NATS_URL":      natstest.Start(t),
		"NATS_PREFIX":   name + id,
		"AUTH_JWKS_URL": jwks.URL,
		"JWT_ISSUER":    Issuer,
		"JWT_AUDIENCE":  Audience,
		"LOG_LEVEL":     "warn",
	}
	if !noDB {
		env["DATABASE_URL"] = pgtest.NewDatabase(t)
	}
	return env
}

// Start runs the service and returns once /readyz answers 200. Cleanup stops
// it and fails the test if run did not return nil within 20 s; the service's
// output is logged when the test failed.
func Start(t testing.TB, name string, run Run, o Options) *Service {
	t.Helper()
	pub, priv := newKey(t)
	env := Env(t, name, pub, o.NoDatabase)
	for k, v := range o.Env {
		env[k] = v
	}
	o.Env = env
	return start(t, name, run, o, priv)
}

func newKey(t testing.TB) (ed25519.PublicKey, ed25519.PrivateKey) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

// start runs the service with exactly o.Env.
func start(t testing.TB, name string, run Run, o Options, priv ed25519.PrivateKey) *Service {
	t.Helper()
	env := o.Env
	args := o.Args
	if len(args) == 0 {
		args = []string{name}
	}
	parent := o.Context
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	s := &Service{Name: name, Env: env, key: priv, cancel: cancel, done: make(chan error, 1), logs: &syncBuffer{}}
	pr, pw := io.Pipe()
	addr := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if a, ok := strings.CutPrefix(line, "listening on "); ok {
				addr <- a
				continue
			}
			s.logs.WriteLine(line)
		}
	}()
	go func() {
		err := run(ctx, args, func(k string) string { return env[k] }, pw)
		_ = pw.Close()
		<-copied
		s.done <- err
	}()
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("%s: run returned %v", name, err)
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, s.Logs())
		}
	})
	select {
	case a := <-addr:
		s.URL = "http://" + a
	case err := <-s.done:
		s.mu.Lock()
		s.finished, s.runErr = true, err
		s.mu.Unlock()
		t.Fatalf("%s ended before listening: %v\n%s", name, err, s.Logs())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not start\n%s", name, s.Logs())
	}
	if err := s.WaitReady(10 * time.Second); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, s.Logs())
	}
	return s
}

// WaitReady polls /readyz until it answers 200.
func (s *Service) WaitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := client.Get(s.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("readyz answered %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Wait returns run's result once it has returned (after the context ended
// or a signal), or an error when it has not within limit.
func (s *Service) Wait(limit time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return s.runErr
	}
	select {
	case s.runErr = <-s.done:
		s.finished = true
		return s.runErr
	case <-time.After(limit):
		return fmt.Errorf("%s: run did not return within %v", s.Name, limit)
	}
}

// Returned reports, without waiting, whether run has returned.
func (s *Service) Returned() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.finished {
		select {
		case s.runErr = <-s.done:
			s.finished = true
		default:
		}
	}
	return s.finished
}

// Stop cancels run's context and waits for it to return.
func (s *Service) Stop() error {
	s.cancel()
	return s.Wait(20 * time.Second)
}

// Logs is everything the service wrote except the "listening on" line.
func (s *Service) Logs() string { return s.logs.String() }

var subjectSeq atomic.Int64

// Token signs an access token for an account of customerID with role the
// way the auth service does; mutate may change claims or header before
// signing.
func (s *Service) Token(t testing.TB, customerID int64, role string, mutate ...func(*authn.Claims, *jwt.Token)) string {
	t.Helper()
	now := time.Now()
	claims := authn.Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    Issuer,
			Subject:   strconv.FormatInt(subjectSeq.Add(1), 10),
			Audience:  jwt.ClaimStrings{Audience},
			ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)),
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ID:        randid.Hex(16),
		},
		CustomerID: customerID,
		Role:       role,
		IssuedAtMs: now.UnixMilli(),
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, &claims)
	tok.Header["kid"] = KeyID
	for _, m := range mutate {
		m(&claims, tok)
	}
	raw, err := tok.SignedString(s.key)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) WriteLine(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.WriteString(s)
	b.b.WriteByte('\n')
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
