package authn

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"supportplatform.dev/pkg/telemetry"
)

// JWK is one public key as published in the JWKS (RFC 8037 OKP for Ed25519).
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
}

// JWKS is the key set document.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// PublicJWK describes an Ed25519 public key.
func PublicJWK(kid string, pub ed25519.PublicKey) JWK {
	return JWK{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(pub), Kid: kid, Use: "sig", Alg: "EdDSA"}
}

// errUnknownKey means the token names a kid the key set does not hold.
var errUnknownKey = errors.New("unknown signing key")

// KeySet fetches and caches the JWKS of the auth service. An unknown kid
// triggers a refetch (keys rotate), rate-limited so forged kids cannot make
// every request call the auth service.
//
// The fetch runs outside the lock and one at a time: callers that need a
// fresh set (unknown kid, or the set is older than maxAge) wait for the one
// fetch under way, while callers whose kid is known in a set that is not
// too old are answered at once, so a slow auth service does not stall every
// verification.
type KeySet struct {
	urls         []string
	client       *http.Client
	now          func() time.Time
	maxAge       time.Duration
	minRefetch   time.Duration
	fetchTimeout time.Duration

	mu        sync.Mutex
	keys      map[string]ed25519.PublicKey
	fetched   time.Time // when the current set was requested
	attempted time.Time // when the last fetch started, successful or not
	lastErr   error     // of the last fetch
	flight    *keyFetch // the fetch under way, nil when none
}

// keyFetch is one fetch of the key set; done is closed when it has ended.
type keyFetch struct {
	done    chan struct{}
	err     error
	waiters int // callers that joined it (tests watch this)
}

// NewKeySet returns a key set cache for url: one URL, or several separated
// by commas (the auth replicas' own addresses when no load balancer is in
// between), tried in turn at each fetch until one answers, so that a
// fetch does not fail while one auth replica restarts. A nil client is a
// traced one (telemetry.HTTPClient) with a 5 s timeout.
func NewKeySet(url string, client *http.Client, now func() time.Time) *KeySet {
	if client == nil {
		client = telemetry.HTTPClient(nil, 5*time.Second)
	}
	var urls []string
	for u := range strings.SplitSeq(url, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	return &KeySet{urls: urls, client: client, now: now, maxAge: 10 * time.Minute, minRefetch: 10 * time.Second,
		fetchTimeout: 10 * time.Second}
}

// Key returns the public key for kid.
func (k *KeySet) Key(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	k.mu.Lock()
	now := k.now()
	key, known := k.keys[kid]
	stale := now.Sub(k.fetched) > k.maxAge
	if known && !stale {
		k.mu.Unlock()
		return key, nil
	}
	f := k.flight
	if f == nil {
		if now.Sub(k.attempted) < k.minRefetch {
			// Forged kids must not make every request call auth, nor every
			// request retry an auth that has just failed.
			err := k.lastErr
			k.mu.Unlock()
			switch {
			case known:
				return key, nil // the refresh failed: keep serving the known key while auth is away
			case err != nil:
				return nil, err
			}
			return nil, errUnknownKey
		}
		f = k.startFetch(ctx, now)
	}
	f.waiters++
	k.mu.Unlock()

	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	k.mu.Lock()
	key, ok := k.keys[kid]
	k.mu.Unlock()
	switch {
	case ok:
		// A failed fetch keeps the old set: a known key is still served
		// while auth is briefly away.
		return key, nil
	case f.err != nil:
		return nil, f.err
	}
	return nil, errUnknownKey
}

// startFetch begins a fetch that outlives the caller that started it (the
// others waiting for it must not fail because that one gave up). k.mu is
// held.
func (k *KeySet) startFetch(ctx context.Context, now time.Time) *keyFetch {
	f := &keyFetch{done: make(chan struct{})}
	k.flight, k.attempted = f, now
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.fetchTimeout)
	go func() {
		defer cancel()
		keys, err := k.fetch(fctx)
		k.mu.Lock()
		if err == nil {
			k.keys, k.fetched = keys, now
		}
		k.lastErr, f.err, k.flight = err, err, nil
		k.mu.Unlock()
		close(f.done)
	}()
	return f
}

// fetch gets the set from the first URL that answers with one.
func (k *KeySet) fetch(ctx context.Context) (map[string]ed25519.PublicKey, error) {
	if len(k.urls) == 0 {
		return nil, errors.New("authn: no JWKS URL")
	}
	var errs []error
	for _, u := range k.urls {
		keys, err := k.fetchFrom(ctx, u)
		if err == nil {
			return keys, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

func (k *KeySet) fetchFrom(ctx context.Context, url string) (map[string]ed25519.PublicKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("authn: fetch jwks: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("authn: fetch jwks: status %d", resp.StatusCode)
	}
	var set JWKS
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return nil, fmt.Errorf("authn: decode jwks: %w", err)
	}
	keys := map[string]ed25519.PublicKey{}
	for _, j := range set.Keys {
		if j.Kty != "OKP" || j.Crv != "Ed25519" {
			continue
		}
		x, err := base64.RawURLEncoding.DecodeString(j.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			continue
		}
		keys[j.Kid] = ed25519.PublicKey(x)
	}
	return keys, nil
}
