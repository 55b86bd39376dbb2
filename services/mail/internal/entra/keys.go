package entra

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"sync"
	"time"
)

// DefaultKeyRefetch is the least time between two fetches of the key set:
// a token naming an unknown kid fetches the keys again (the platform
// rotates them), but forged kids cannot make every sign-in fetch.
const DefaultKeyRefetch = time.Minute

// Bounds of the key set read.
const (
	maxKeysResponse = 512 << 10
	maxKeys         = 100
)

var errUnknownKey = errors.New("entra: unknown signing key")

// keySet caches the identity platform's RSA signing keys by kid.
type keySet struct {
	url     string
	http    *http.Client
	now     func() time.Time
	refetch time.Duration

	mu        sync.Mutex
	keys      map[string]*rsa.PublicKey
	fetchedAt time.Time
}

func newKeySet(url string, hc *http.Client, now func() time.Time, refetch time.Duration) *keySet {
	if refetch <= 0 {
		refetch = DefaultKeyRefetch
	}
	return &keySet{url: url, http: hc, now: now, refetch: refetch}
}

// key returns the key kid names, fetching the set when it is not known yet
// and the last fetch is at least refetch ago. One fetch at a time.
func (k *keySet) key(ctx context.Context, kid string) (*rsa.PublicKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if pk, ok := k.keys[kid]; ok {
		return pk, nil
	}
	now := k.now()
	if k.keys != nil && now.Sub(k.fetchedAt) < k.refetch {
		return nil, errUnknownKey
	}
	keys, err := k.fetch(ctx)
	if err != nil {
		return nil, err
	}
	k.keys, k.fetchedAt = keys, now
	if pk, ok := keys[kid]; ok {
		return pk, nil
	}
	return nil, errUnknownKey
}

type jwk struct {
	Kty string `json:"kty"`
	Use string `json:"use"`
	Kid string `json:"kid"`
	N   string `json:"n"`
	E   string `json:"e"`
}

func (k *keySet) fetch(ctx context.Context) (map[string]*rsa.PublicKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("keys answered %d", resp.StatusCode)
	}
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxKeysResponse)).Decode(&set); err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	out := map[string]*rsa.PublicKey{}
	for _, j := range set.Keys {
		if len(out) == maxKeys {
			break
		}
		if j.Kty != "RSA" || (j.Use != "" && j.Use != "sig") || j.Kid == "" {
			continue
		}
		n, err1 := base64.RawURLEncoding.DecodeString(j.N)
		e, err2 := base64.RawURLEncoding.DecodeString(j.E)
		if err1 != nil || err2 != nil || len(n) < 256 || len(e) == 0 || len(e) > 4 {
			continue
		}
		exp := int(new(big.Int).SetBytes(e).Int64())
		if exp < 3 {
			continue
		}
		out[j.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: exp}
	}
	return out, nil
}
