package auth

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"supportplatform.dev/pkg/authn"
)

// Signer issues access tokens with the Ed25519 signing key.
type Signer struct {
	key      ed25519.PrivateKey
	kid      string
	issuer   string
	audience string
	ttl      time.Duration
}

// NewSigner returns a signer; the key id is derived from the public key so it
// changes exactly when the key does.
func NewSigner(key ed25519.PrivateKey, issuer, audience string, ttl time.Duration) *Signer {
	sum := sha256.Sum256(key.Public().(ed25519.PublicKey))
	return &Signer{key: key, kid: base64.RawURLEncoding.EncodeToString(sum[:12]), issuer: issuer, audience: audience, ttl: ttl}
}

// JWKS is the published key set.
func (s *Signer) JWKS() authn.JWKS {
	return authn.JWKS{Keys: []authn.JWK{authn.PublicJWK(s.kid, s.key.Public().(ed25519.PublicKey))}}
}

// Token is an issued access token.
type Token struct {
	Raw       string
	ExpiresAt time.Time
	TTL       time.Duration
}

// Sign issues a token for an account.
func (s *Signer) Sign(a Account, now time.Time) (Token, error) {
	var jti [16]byte
	_, _ = rand.Read(jti[:])
	exp := now.Add(s.ttl)
	claims := authn.Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    s.issuer,
			Subject:   strconv.FormatInt(a.ID, 10),
			Audience:  jwt.ClaimStrings{s.audience},
			ExpiresAt: jwt.NewNumericDate(exp),
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ID:        hex.EncodeToString(jti[:]),
		},
		CustomerID: a.CustomerID,
		Role:       a.Role,
		IssuedAtMs: now.UnixMilli(),
	}
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	t.Header["kid"] = s.kid
	raw, err := t.SignedString(s.key)
	if err != nil {
		return Token{}, err
	}
	return Token{Raw: raw, ExpiresAt: exp.Truncate(time.Second), TTL: s.ttl}, nil
}
