package authn

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Revocations is the Redis revocation list: single tokens (logout) and
// "every token of this account issued before T" (password change or reset).
type Revocations struct {
	rdb    *redis.Client
	prefix string
	// AccountTTL bounds how long an account cut-off is kept; it must exceed
	// the longest token lifetime.
	AccountTTL time.Duration
}

// NewRevocations returns the list with keys under prefix.
func NewRevocations(rdb *redis.Client, prefix string) *Revocations {
	return &Revocations{rdb: rdb, prefix: prefix, AccountTTL: 7 * 24 * time.Hour}
}

func (r *Revocations) tokenKey(jti string) string { return r.prefix + "revoked:jti:" + jti }
func (r *Revocations) accountKey(id int64) string {
	return r.prefix + "revoked:account:" + strconv.FormatInt(id, 10)
}

// RevokeToken refuses the token with jti until it would have expired anyway.
func (r *Revocations) RevokeToken(ctx context.Context, jti string, until time.Time, now time.Time) error {
	ttl := until.Sub(now)
	if ttl <= 0 {
		return nil
	}
	if err := r.rdb.Set(ctx, r.tokenKey(jti), "1", ttl+time.Second).Err(); err != nil {
		return fmt.Errorf("authn: revoke token: %w", err)
	}
	return nil
}

// RevokeAccountBefore refuses every token of the account issued before t.
func (r *Revocations) RevokeAccountBefore(ctx context.Context, accountID int64, t time.Time) error {
	if err := r.rdb.Set(ctx, r.accountKey(accountID), strconv.FormatInt(t.UnixMilli(), 10), r.AccountTTL).Err(); err != nil {
		return fmt.Errorf("authn: revoke account tokens: %w", err)
	}
	return nil
}

// Revoked reports whether a token (jti, account, issue time) is refused.
// Both keys are read with one MGET: every authenticated request of every
// service asks, and one command costs Redis and the client less than a
// pipeline of two.
func (r *Revocations) Revoked(ctx context.Context, jti string, accountID int64, issuedAt time.Time) (bool, error) {
	vals, err := r.rdb.MGet(ctx, r.tokenKey(jti), r.accountKey(accountID)).Result()
	if err != nil {
		return false, fmt.Errorf("authn: revocation check: %w", err)
	}
	if len(vals) != 2 {
		return false, fmt.Errorf("authn: revocation check: %d values for 2 keys", len(vals))
	}
	if vals[0] != nil {
		return true, nil
	}
	if s, ok := vals[1].(string); ok {
		if ms, err := strconv.ParseInt(s, 10, 64); err == nil && issuedAt.UnixMilli() < ms {
			return true, nil
		}
	}
	return false, nil
}
