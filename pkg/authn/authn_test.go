package authn_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/redistest"
)

type fixture struct {
	key     ed25519.PrivateKey
	kid     string
	now     time.Time
	v       *authn.Verifier
	fetches *atomic.Int32
	jwksOK  *atomic.Bool
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	f := &fixture{key: key, kid: "k1", now: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC),
		fetches: new(atomic.Int32), jwksOK: new(atomic.Bool)}
	f.jwksOK.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.fetches.Add(1)
		if !f.jwksOK.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(authn.JWKS{Keys: []authn.JWK{authn.PublicJWK(f.kid, key.Public().(ed25519.PublicKey))}})
	}))
	t.Cleanup(srv.Close)
	rdb := redis.NewClient(redistest.Options(t))
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "test:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		keys, _ := rdb.Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(context.Background(), keys...)
		}
		rdb.Close()
	})
	clock := func() time.Time { return f.now }
	f.v = &authn.Verifier{Keys: authn.NewKeySet(srv.URL, nil, clock), Revocations: authn.NewRevocations(rdb, prefix),
		Issuer: "iss", Audience: "aud", Now: clock}
	return f
}

func (f *fixture) claims() authn.Claims {
	return authn.Claims{
		RegisteredClaims: jwt.RegisteredClaims{Issuer: "iss", Subject: "11", Audience: jwt.ClaimStrings{"aud"},
			ExpiresAt: jwt.NewNumericDate(f.now.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(f.now), ID: "jti-1"},
		CustomerID: 5, Role: "agent", IssuedAtMs: f.now.UnixMilli(),
	}
}

func (f *fixture) sign(t *testing.T, c authn.Claims, kid string, key ed25519.PrivateKey) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVerify(t *testing.T) {
	f := newFixture(t)
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	good := f.sign(t, f.claims(), f.kid, f.key)

	p, err := f.v.Verify(context.Background(), good)
	if err != nil || p.CustomerID != 5 || p.AccountID != 11 || p.Role != "agent" || p.TokenID != "jti-1" {
		t.Fatalf("valid token: %+v %v", p, err)
	}

	mod := func(fn func(*authn.Claims)) string {
		c := f.claims()
		fn(&c)
		return f.sign(t, c, f.kid, f.key)
	}
	parts := strings.Split(good, ".")
	header, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT", "kid": f.kid})
	algNone := base64.RawURLEncoding.EncodeToString(header) + "." + parts[1] + "."
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"1","cid":999}`)) + "." + parts[2]
	rsTok := jwt.NewWithClaims(jwt.SigningMethodRS256, f.claims())
	rsTok.Header["kid"] = f.kid
	rs, _ := rsTok.SignedString(rsaKey)
	hsTok := jwt.NewWithClaims(jwt.SigningMethodHS256, f.claims())
	hsTok.Header["kid"] = f.kid
	// The classic confusion attack: HMAC keyed with the public key bytes.
	hs, _ := hsTok.SignedString([]byte(f.key.Public().(ed25519.PublicKey)))

	bad := map[string]string{
		"garbage":          "not.a.jwt",
		"alg none":         algNone,
		"tampered payload": tampered,
		"other key":        f.sign(t, f.claims(), f.kid, otherKey),
		"unknown kid":      f.sign(t, f.claims(), "k2", otherKey),
		"rs256":            rs,
		"hs256 confusion":  hs,
		"expired":          mod(func(c *authn.Claims) { c.ExpiresAt = jwt.NewNumericDate(f.now.Add(-time.Minute)) }),
		"no expiry":        mod(func(c *authn.Claims) { c.ExpiresAt = nil }),
		"wrong issuer":     mod(func(c *authn.Claims) { c.Issuer = "evil" }),
		"wrong audience":   mod(func(c *authn.Claims) { c.Audience = jwt.ClaimStrings{"other"} }),
		"no customer":      mod(func(c *authn.Claims) { c.CustomerID = 0 }),
		"bad subject":      mod(func(c *authn.Claims) { c.Subject = "abc" }),
		"future iat":       mod(func(c *authn.Claims) { c.IssuedAt = jwt.NewNumericDate(f.now.Add(time.Hour)) }),
	}
	for name, tok := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := f.v.Verify(context.Background(), tok)
			if !apperr.Is(err, apperr.Unauthorized) {
				t.Fatalf("want unauthorized, got %v", err)
			}
		})
	}
}

func TestUnknownKidRefetchIsRateLimited(t *testing.T) {
	f := newFixture(t)
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	if _, err := f.v.Verify(context.Background(), f.sign(t, f.claims(), f.kid, f.key)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		_, _ = f.v.Verify(context.Background(), f.sign(t, f.claims(), "forged", otherKey))
	}
	if n := f.fetches.Load(); n != 1 {
		t.Fatalf("forged kids caused %d fetches, want 1", n)
	}
	f.now = f.now.Add(11 * time.Second)
	_, _ = f.v.Verify(context.Background(), f.sign(t, f.claims(), "forged", otherKey))
	if n := f.fetches.Load(); n != 2 {
		t.Fatalf("after the interval an unknown kid refetches once, got %d", n)
	}
}

func TestJWKSDownIsUnavailableNotUnauthorized(t *testing.T) {
	f := newFixture(t)
	f.jwksOK.Store(false)
	_, err := f.v.Verify(context.Background(), f.sign(t, f.claims(), f.kid, f.key))
	if !apperr.Is(err, apperr.Unavailable) {
		t.Fatalf("want unavailable, got %v", err)
	}
}

func TestRevocation(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tok := f.sign(t, f.claims(), f.kid, f.key)
	if err := f.v.Revocations.RevokeToken(ctx, "jti-1", f.now.Add(time.Hour), f.now); err != nil {
		t.Fatal(err)
	}
	if _, err := f.v.Verify(ctx, tok); !apperr.Is(err, apperr.Unauthorized) {
		t.Fatalf("revoked token accepted: %v", err)
	}
	c := f.claims()
	c.ID = "jti-2"
	before := f.sign(t, c, f.kid, f.key)
	if err := f.v.Revocations.RevokeAccountBefore(ctx, 11, f.now.Add(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.v.Verify(ctx, before); !apperr.Is(err, apperr.Unauthorized) {
		t.Fatalf("token issued before the cut-off accepted: %v", err)
	}
	c.ID, c.IssuedAtMs = "jti-3", f.now.Add(2*time.Millisecond).UnixMilli()
	if _, err := f.v.Verify(ctx, f.sign(t, c, f.kid, f.key)); err != nil {
		t.Fatalf("token issued after the cut-off refused: %v", err)
	}
}

func TestVerifiedTokensAreCachedButStillExpireAndRevoke(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tok := f.sign(t, f.claims(), f.kid, f.key)
	if _, err := f.v.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	// A cached token is still refused once revoked...
	if err := f.v.Revocations.RevokeToken(ctx, "jti-1", f.now.Add(time.Hour), f.now); err != nil {
		t.Fatal(err)
	}
	if _, err := f.v.Verify(ctx, tok); !apperr.Is(err, apperr.Unauthorized) {
		t.Fatalf("revoked cached token accepted: %v", err)
	}
	// ...and once expired.
	c := f.claims()
	c.ID, c.ExpiresAt = "jti-9", jwt.NewNumericDate(f.now.Add(time.Minute))
	short := f.sign(t, c, f.kid, f.key)
	if _, err := f.v.Verify(ctx, short); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(2 * time.Minute)
	if _, err := f.v.Verify(ctx, short); !apperr.Is(err, apperr.Unauthorized) {
		t.Fatalf("expired cached token accepted: %v", err)
	}
}
