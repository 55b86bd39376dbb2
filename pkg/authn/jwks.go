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
	"sync"
	"time"
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
type KeySet struct {
	url        string
	client     *http.Client
	now        func() time.Time
	maxAge     time.Duration
	minRefetch time.Duration

	mu      sync.Mutex
	keys    map[string]ed25519.PublicKey
	fetched time.Time
}

// NewKeySet returns a key set cache for url.
func NewKeySet(url string, client *http.Client, now func() time.Time) *KeySet {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	return &KeySet{url: url, client: client, now: now, maxAge: 10 * time.Minute, minRefetch: 10 * time.Second}
}

// Key returns the public key for kid.
func (k *KeySet) Key(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	stale := k.now().Sub(k.fetched) > k.maxAge
	if key, ok := k.keys[kid]; ok && !stale {
		return key, nil
	}
	if stale || k.now().Sub(k.fetched) >= k.minRefetch {
		if err := k.fetch(ctx); err != nil {
			if key, ok := k.keys[kid]; ok {
				return key, nil // keep serving a known key while auth is briefly away
			}
			return nil, err
		}
	}
	if key, ok := k.keys[kid]; ok {
		return key, nil
	}
	return nil, errUnknownKey
}

func (k *KeySet) fetch(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return err
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return fmt.Errorf("authn: fetch jwks: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("authn: fetch jwks: status %d", resp.StatusCode)
	}
	var set JWKS
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return fmt.Errorf("authn: decode jwks: %w", err)
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
	k.keys, k.fetched = keys, k.now()
	return nil
}
