// Package authn verifies the platform's JWTs in every service: signature
// against the auth service's JWKS, algorithm, issuer, audience, expiry and the
// Redis revocation list. It puts the caller's Principal in the request context.
package authn

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/golang-jwt/jwt/v5"

	"supportplatform.dev/pkg/apperr"
)

// Roles.
const (
	RoleAdmin       = "admin"
	RoleAgent       = "agent"
	RoleIntegration = "integration"
)

// Principal is who is calling.
type Principal struct {
	CustomerID int64
	AccountID  int64
	Role       string
	TokenID    string
	IssuedAt   time.Time
	ExpiresAt  time.Time
}

// Claims is the token payload the auth service signs.
type Claims struct {
	jwt.RegisteredClaims
	CustomerID int64  `json:"cid"`
	Role       string `json:"role"`
	// IssuedAtMs has millisecond precision so a password change in the same
	// second as a login still voids the tokens issued before it.
	IssuedAtMs int64 `json:"iat_ms"`
}

// Verifier checks tokens.
type Verifier struct {
	Keys        *KeySet
	Revocations *Revocations
	Issuer      string
	Audience    string
	Now         func() time.Time

	once  sync.Once
	cache *verifiedCache
}

// Verify checks a raw token: signature, claims and the revocation list.
func (v *Verifier) Verify(ctx context.Context, raw string) (Principal, error) {
	v.once.Do(func() { v.cache = newVerifiedCache(10_000, 5*time.Minute) })
	p, ok := v.cache.get(raw, v.Now())
	if !ok {
		var err error
		if p, err = v.verifySignedClaims(ctx, raw); err != nil {
			return Principal{}, err
		}
		v.cache.put(raw, p, v.Now())
	}
	revoked, err := v.Revocations.Revoked(ctx, p.TokenID, p.AccountID, p.IssuedAt)
	if err != nil {
		return Principal{}, apperr.Wrap(apperr.Unavailable, err, "token verification is temporarily unavailable")
	}
	if revoked {
		return Principal{}, apperr.E(apperr.Unauthorized, "the access token has been revoked; log in again")
	}
	return p, nil
}

func (v *Verifier) verifySignedClaims(ctx context.Context, raw string) (Principal, error) {
	var c Claims
	_, err := jwt.ParseWithClaims(raw, &c, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if kid == "" {
			return nil, errors.New("token has no kid")
		}
		key, err := v.Keys.Key(ctx, kid)
		if err != nil && !errors.Is(err, errUnknownKey) {
			return nil, &keysUnavailable{err}
		}
		return key, err
	},
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithIssuer(v.Issuer),
		jwt.WithAudience(v.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(v.Now),
		jwt.WithLeeway(5*time.Second),
	)
	if err != nil {
		var ku *keysUnavailable
		switch {
		case errors.As(err, &ku):
			// the key set could not be fetched: not the caller's fault
			return Principal{}, apperr.Wrap(apperr.Unavailable, err, "token verification is temporarily unavailable")
		case errors.Is(err, jwt.ErrTokenExpired):
			return Principal{}, apperr.Wrap(apperr.Unauthorized, err, "the access token has expired; log in again")
		default:
			return Principal{}, apperr.Wrap(apperr.Unauthorized, err, "the access token is invalid")
		}
	}
	acct, err := strconv.ParseInt(c.Subject, 10, 64)
	if err != nil || c.CustomerID <= 0 || c.ID == "" || c.IssuedAt == nil {
		return Principal{}, apperr.E(apperr.Unauthorized, "the access token is invalid")
	}
	issued := time.UnixMilli(c.IssuedAtMs)
	if c.IssuedAtMs == 0 {
		issued = c.IssuedAt.Time
	}
	return Principal{CustomerID: c.CustomerID, AccountID: acct, Role: c.Role, TokenID: c.ID,
		IssuedAt: issued, ExpiresAt: c.ExpiresAt.Time}, nil
}

// keysUnavailable marks a failure to fetch the key set.
type keysUnavailable struct{ err error }

func (k *keysUnavailable) Error() string { return k.err.Error() }
func (k *keysUnavailable) Unwrap() error { return k.err }

type ctxKey struct{}

// WithPrincipal stores p in ctx.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the caller. Handlers behind Middleware always have one.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(Principal)
	return p, ok
}

// Must returns the caller or an Unauthorized error.
func Must(ctx context.Context) (Principal, error) {
	p, ok := FromContext(ctx)
	if !ok {
		return Principal{}, apperr.E(apperr.Unauthorized, "authentication is required")
	}
	return p, nil
}

// Middleware requires a valid bearer token; fail writes the error answer.
func Middleware(v *Verifier, fail func(*gin.Context, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.GetHeader("Authorization")
		scheme, tok, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
			c.Header("WWW-Authenticate", `Bearer realm="api"`)
			fail(c, apperr.E(apperr.Unauthorized, "an Authorization: Bearer <token> header is required"))
			return
		}
		p, err := v.Verify(c.Request.Context(), strings.TrimSpace(tok))
		if err != nil {
			if apperr.Is(err, apperr.Unauthorized) {
				c.Header("WWW-Authenticate", `Bearer realm="api", error="invalid_token"`)
			}
			fail(c, err)
			return
		}
		c.Request = c.Request.WithContext(WithPrincipal(c.Request.Context(), p))
		c.Next()
	}
}

// RequireRole lets only callers with role through (after Middleware);
// others get 403 before their request is read.
func RequireRole(role string, fail func(*gin.Context, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		p, err := Must(c.Request.Context())
		if err == nil && p.Role != role {
			err = apperr.E(apperr.Forbidden, "this needs the %s role", role)
		}
		if err != nil {
			fail(c, err)
			return
		}
		c.Next()
	}
}
