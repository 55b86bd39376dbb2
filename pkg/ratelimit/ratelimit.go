// Package ratelimit holds Redis-backed limits shared by every replica of a
// service: a fixed-window counter of events (Limiter: account creations,
// reset mails, feedback) and a counter of the failures of attempts whose
// outcome comes after they ran (Attempts: logins).
package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Limiter allows Limit hits per Window per key.
type Limiter struct {
	rdb    *redis.Client
	prefix string
	Limit  int
	Window time.Duration
}

// New returns a limiter whose keys start with prefix.
func New(rdb *redis.Client, prefix string, limit int, window time.Duration) *Limiter {
	return &Limiter{rdb: rdb, prefix: prefix, Limit: limit, Window: window}
}

// Result of a hit.
type Result struct {
	Allowed    bool
	Count      int
	RetryAfter time.Duration // when not allowed: until the window resets
}

// The window starts with the first hit and the counter expires with it;
// one script keeps INCR and PEXPIRE atomic.
var hitScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {n, ttl}
`)

// Hit counts one event for key and reports whether it is within the limit.
func (l *Limiter) Hit(ctx context.Context, key string) (Result, error) {
	v, err := hitScript.Run(ctx, l.rdb, []string{l.prefix + key}, l.Window.Milliseconds()).Int64Slice()
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit: hit: %w", err)
	}
	n, ttl := int(v[0]), time.Duration(v[1])*time.Millisecond
	r := Result{Allowed: n <= l.Limit, Count: n}
	if !r.Allowed {
		r.RetryAfter = ttl
	}
	return r, nil
}
