package authn

import (
	"context"
	"errors"
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
func (r *Revocations) Revoked(ctx context.Context, jti string, accountID int64, issuedAt time.Time) (bool, error) {
	pipe := r.rdb.Pipeline()
	tok := pipe.Exists(ctx, r.tokenKey(jti))
	acct := pipe.Get(ctx, r.accountKey(accountID))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("authn: revocation check: %w", err)
	}
	if tok.Val() > 0 {
		return true, nil
	}
	if ms, err := acct.Int64(); err == nil && issuedAt.UnixMilli() < ms {
		return true, nil
	}
	return false, nil
}
