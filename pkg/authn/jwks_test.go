package authn

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"supportplatform.dev/pkg/clocktest"
)

// jwksServer serves k1 on its first request; later requests block until
// release is called, then serve k1 and k2.
type jwksServer struct {
	k1, k2   ed25519.PublicKey
	requests atomic.Int32
	arrived  chan struct{} // one value per blocked request
	gate     chan struct{}
	once     sync.Once
	down     atomic.Bool
	url      string
}

func newJWKSServer(t *testing.T) *jwksServer {
	t.Helper()
	s := &jwksServer{arrived: make(chan struct{}, 100), gate: make(chan struct{})}
	s.k1, _, _ = ed25519.GenerateKey(rand.Reader)
	s.k2, _, _ = ed25519.GenerateKey(rand.Reader)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		set := JWKS{Keys: []JWK{PublicJWK("k1", s.k1)}}
		if s.requests.Add(1) > 1 {
			s.arrived <- struct{}{}
			<-s.gate
			set.Keys = append(set.Keys, PublicJWK("k2", s.k2))
		}
		if s.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(s.release) // runs first: no handler stays blocked
	s.url = srv.URL
	return s
}

func (s *jwksServer) release() { s.once.Do(func() { close(s.gate) }) }

func (s *jwksServer) waitArrived(t *testing.T) {
	t.Helper()
	select {
	case <-s.arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("the refresh never reached the JWKS server")
	}
}

// loaded returns a key set that has fetched the first set (k1).
func loaded(t *testing.T, s *jwksServer) (*KeySet, *clocktest.Clock) {
	t.Helper()
	c := clocktest.New(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	k := NewKeySet(s.url, nil, c.Now)
	if _, err := k.Key(context.Background(), "k1"); err != nil {
		t.Fatal(err)
	}
	return k, c
}

func TestKnownKidIsServedWhileARefreshIsInFlight(t *testing.T) {
	s := newJWKSServer(t)
	k, c := loaded(t, s)
	c.Advance(11 * time.Second) // past the refetch interval, well within maxAge
	got := make(chan error, 1)
	go func() {
		key, err := k.Key(context.Background(), "k2")
		if err == nil && !key.Equal(s.k2) {
			err = errors.New("wrong key for k2")
		}
		got <- err
	}()
	s.waitArrived(t) // the refresh is now blocked in the server

	for i := 0; i < 10; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		key, err := k.Key(ctx, "k1")
		cancel()
		if err != nil || !key.Equal(s.k1) {
			t.Fatalf("a known kid waited for the refresh: %v", err)
		}
	}
	select {
	case err := <-got:
		t.Fatalf("the unknown kid returned before the refresh ended: %v", err)
	default:
	}
	s.release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

func TestParallelUnknownKidsShareOneFetch(t *testing.T) {
	s := newJWKSServer(t)
	k, c := loaded(t, s)
	c.Advance(11 * time.Second)
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key, err := k.Key(context.Background(), "k2")
			if err == nil && !key.Equal(s.k2) {
				err = errors.New("wrong key for k2")
			}
			errs <- err
		}()
	}
	s.waitArrived(t)
	// Every caller is waiting while the one fetch is blocked.
	deadline := time.Now().Add(5 * time.Second)
	for {
		k.mu.Lock()
		w := 0
		if k.flight != nil {
			w = k.flight.waiters
		}
		k.mu.Unlock()
		if w == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d callers joined the fetch under way", w, n)
		}
		time.Sleep(time.Millisecond) // polling goroutines' progress, not time
	}
	s.release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := s.requests.Load(); got != 2 {
		t.Fatalf("%d JWKS requests, want 2 (the first load and one refresh)", got)
	}
}

func TestWaiterGivesUpWithoutCancellingTheFetch(t *testing.T) {
	s := newJWKSServer(t)
	k, c := loaded(t, s)
	c.Advance(11 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := k.Key(ctx, "k2")
		got <- err
	}()
	s.waitArrived(t)
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled caller got %v", err)
	}
	s.release()
	// The fetch it started went on; its result serves the next caller.
	k.mu.Lock()
	f := k.flight
	k.mu.Unlock()
	if f != nil {
		<-f.done
	}
	key, err := k.Key(context.Background(), "k2")
	if err != nil || !key.Equal(s.k2) {
		t.Fatalf("after the fetch: %v", err)
	}
	if got := s.requests.Load(); got != 2 {
		t.Fatalf("%d JWKS requests, want 2", got)
	}
}

func TestStaleSetWithAuthDownServesKnownKeysAndRetriesSparingly(t *testing.T) {
	s := newJWKSServer(t)
	k, c := loaded(t, s)
	s.down.Store(true)
	s.release()
	c.Advance(11 * time.Minute) // the set is stale
	for i := 0; i < 5; i++ {
		key, err := k.Key(context.Background(), "k1")
		if err != nil || !key.Equal(s.k1) {
			t.Fatalf("known kid while auth is down: %v", err)
		}
	}
	if _, err := k.Key(context.Background(), "k9"); err == nil || errors.Is(err, errUnknownKey) {
		t.Fatalf("an unknown kid while auth is down must be a fetch error, got %v", err)
	}
	if got := s.requests.Load(); got != 2 {
		t.Fatalf("%d JWKS requests, want 2: one failed refresh, then none within the interval", got)
	}
	c.Advance(11 * time.Second)
	_, _ = k.Key(context.Background(), "k1")
	if got := s.requests.Load(); got != 3 {
		t.Fatalf("%d JWKS requests, want a retry after the interval", got)
	}
}

// With several JWKS URLs (auth replicas), a fetch goes on to the next one
// when one refuses or fails: a replica restarting does not make a first
// verification fail.
func TestKeySetTriesEachURL(t *testing.T) {
	s := newJWKSServer(t)
	refused := httptest.NewServer(http.NotFoundHandler())
	refusedURL := refused.URL
	refused.Close() // nothing listens there any more
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(failing.Close)
	c := clocktest.New(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	k := NewKeySet(refusedURL+"/jwks, "+failing.URL+"/jwks,"+s.url, nil, c.Now)
	key, err := k.Key(context.Background(), "k1")
	if err != nil || !key.Equal(s.k1) {
		t.Fatalf("key %v, err %v", key, err)
	}
	// Every URL failing: the error names each.
	none := NewKeySet(refusedURL+","+failing.URL, nil, c.Now)
	if _, err := none.Key(context.Background(), "k1"); err == nil || !strings.Contains(err.Error(), "status 503") || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("err %v", err)
	}
}
