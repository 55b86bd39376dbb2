// Package streamticket issues and redeems stream tickets: a browser's
// EventSource cannot send an Authorization header, so the console trades
// its bearer token for a short-lived, single-use ticket that it puts in the
// stream's URL. Only a hash of the ticket is stored (Redis), bound to the
// token's customer, account, id and expiry.
package streamticket

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/authn"
)

// Store keeps tickets in Redis.
type Store struct {
	rdb    *redis.Client
	prefix string
	ttl    time.Duration
	now    func() time.Time
}

// New returns a store with keys under prefix; a ticket lives ttl at most
// (never beyond its token).
func New(rdb *redis.Client, prefix string, ttl time.Duration, now func() time.Time) *Store {
	return &Store{rdb: rdb, prefix: prefix, ttl: ttl, now: now}
}

// record is what a ticket stands for.
type record struct {
	CustomerID int64  `json:"cid"`
	AccountID  int64  `json:"aid"`
	Role       string `json:"role"`
	TokenID    string `json:"jti"`
	IssuedAtMs int64  `json:"iat"`
	ExpiresMs  int64  `json:"exp"`
	// UntilMs is when the ticket itself expires.
	UntilMs int64 `json:"until"`
}

// encodedLen is the length of a ticket: 32 random bytes, base64url.
var encodedLen = base64.RawURLEncoding.EncodedLen(32)

func (s *Store) key(ticket string) string {
	sum := sha256.Sum256([]byte(ticket))
	return s.prefix + "live:ticket:" + hex.EncodeToString(sum[:])
}

// Issue returns a new ticket for p and when it expires.
func (s *Store) Issue(ctx context.Context, p authn.Principal) (string, time.Time, error) {
	now := s.now()
	exp := now.Add(s.ttl)
	if p.ExpiresAt.Before(exp) {
		exp = p.ExpiresAt
	}
	if !exp.After(now) {
		return "", time.Time{}, apperr.E(apperr.Unauthorized, "the access token has expired; log in again")
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", time.Time{}, fmt.Errorf("streamticket: %w", err)
	}
	ticket := base64.RawURLEncoding.EncodeToString(raw[:])
	rec, err := json.Marshal(record{CustomerID: p.CustomerID, AccountID: p.AccountID, Role: p.Role, TokenID: p.TokenID,
		IssuedAtMs: p.IssuedAt.UnixMilli(), ExpiresMs: p.ExpiresAt.UnixMilli(), UntilMs: exp.UnixMilli()})
	if err != nil {
		return "", time.Time{}, err
	}
	if err := s.rdb.Set(ctx, s.key(ticket), rec, exp.Sub(now)).Err(); err != nil {
		return "", time.Time{}, apperr.Wrap(apperr.Unavailable, err, "stream tickets are temporarily unavailable")
	}
	return ticket, exp, nil
}

var errInvalid = apperr.E(apperr.Unauthorized, "the stream ticket is invalid, used or expired; ask for a new one")

// Redeem takes the ticket (it works once) and returns the principal of the
// token it was issued for. The caller still checks the token's revocation.
func (s *Store) Redeem(ctx context.Context, ticket string) (authn.Principal, error) {
	if len(ticket) != encodedLen {
		return authn.Principal{}, errInvalid
	}
	if _, err := base64.RawURLEncoding.DecodeString(ticket); err != nil {
		return authn.Principal{}, errInvalid
	}
	b, err := s.rdb.GetDel(ctx, s.key(ticket)).Bytes()
	if errors.Is(err, redis.Nil) {
		return authn.Principal{}, errInvalid
	}
	if err != nil {
		return authn.Principal{}, apperr.Wrap(apperr.Unavailable, err, "stream tickets are temporarily unavailable")
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return authn.Principal{}, fmt.Errorf("streamticket: stored ticket: %w", err)
	}
	p := authn.Principal{CustomerID: r.CustomerID, AccountID: r.AccountID, Role: r.Role, TokenID: r.TokenID,
		IssuedAt: time.UnixMilli(r.IssuedAtMs), ExpiresAt: time.UnixMilli(r.ExpiresMs)}
	// Redis expires the key itself; this holds to the service's clock.
	if now := s.now(); !p.ExpiresAt.After(now) || !time.UnixMilli(r.UntilMs).After(now) {
		return authn.Principal{}, errInvalid
	}
	return p, nil
}
