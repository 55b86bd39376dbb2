package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"supportplatform.dev/pkg/randid"
)

// Attempts throttles the failures of an operation whose outcome is known
// only after it ran, such as a login: at most Limit failures per Window
// per key, with the attempts under way counted against the limit too, so
// that many parallel attempts cannot each pass the check before any of
// them has failed.
//
// An attempt is begun (Begin), then ended once (Failed, Done or Clear).
// The failures are a fixed-window counter that starts with the first
// failure. An attempt under way is a member of a sorted set scored with
// its own expiry (Pending after it began): an attempt that is never ended,
// because Redis went away between Begin and its end or the process died,
// stops counting at its expiry instead of staying counted as a failure
// for the rest of the window. That is what keeps a Redis or database
// outage from locking out the addresses that kept logging in during it.
type Attempts struct {
	rdb    *redis.Client
	prefix string
	Limit  int
	Window time.Duration
	// Pending is how long an attempt that was not ended counts: longer
	// than the operation's own worst duration.
	Pending time.Duration

	// unrecorded are the ends Redis did not take; the next Begin records
	// them first.
	unrecorded backlog
}

// NewAttempts returns a limiter of limit failures per window whose keys
// start with prefix; an attempt not ended counts for pending.
func NewAttempts(rdb *redis.Client, prefix string, limit int, window, pending time.Duration) *Attempts {
	return &Attempts{rdb: rdb, prefix: prefix, Limit: limit, Window: window, Pending: pending}
}

// Attempt is one begun attempt; end it with Failed, Done or Clear.
type Attempt struct {
	key, id string
}

// beginScript drops the expired attempts under way, refuses when the
// failures and the attempts under way already reach the limit (with the
// time until one of them goes: the failures' window, or else the soonest
// expiry of an attempt), and otherwise adds the attempt. Redis's own clock
// scores the attempts, so replicas' clocks do not matter.
//
// KEYS: failures, attempts under way. ARGV: attempt id, limit, pending ms.
var beginScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local failures = tonumber(redis.call('GET', KEYS[1]) or '0')
local pending = redis.call('ZCARD', KEYS[2])
if failures + pending >= tonumber(ARGV[2]) then
  local wait = -1
  if failures >= tonumber(ARGV[2]) then wait = redis.call('PTTL', KEYS[1]) end
  if wait < 0 then
    local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    if first[2] then wait = tonumber(first[2]) - now else wait = tonumber(ARGV[3]) end
  end
  return {0, failures + pending, wait}
end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return {1, failures + pending + 1, 0}
`)

// Begin starts an attempt for key. When the failures and the attempts
// under way already reach the limit, the attempt is refused (Allowed
// false, nothing to end) with RetryAfter set. Count includes the attempts
// under way.
func (a *Attempts) Begin(ctx context.Context, key string) (Attempt, Result, error) {
	if err := a.unrecorded.flush(ctx); err != nil {
		return Attempt{}, Result{}, fmt.Errorf("ratelimit: begin: %w", err)
	}
	at := Attempt{key: key, id: randid.Hex(8)}
	v, err := beginScript.Run(ctx, a.rdb, a.keys(key), at.id, a.Limit, a.Pending.Milliseconds()).Int64Slice()
	if err != nil {
		return Attempt{}, Result{}, fmt.Errorf("ratelimit: begin: %w", err)
	}
	r := Result{Allowed: v[0] == 1, Count: int(v[1])}
	if !r.Allowed {
		r.RetryAfter = max(time.Duration(v[2])*time.Millisecond, time.Millisecond)
		return Attempt{}, r, nil
	}
	return at, r, nil
}

// endScript ends an attempt: ARGV[2] "fail" counts a failure (the window
// starts with the first), "clear" forgets the failures, "done" neither.
//
// KEYS: failures, attempts under way. ARGV: attempt id, outcome, window ms.
var endScript = redis.NewScript(`
redis.call('ZREM', KEYS[2], ARGV[1])
if ARGV[2] == 'fail' then
  local n = redis.call('INCR', KEYS[1])
  if n == 1 or redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
elseif ARGV[2] == 'clear' then
  redis.call('DEL', KEYS[1])
end
return 1
`)

// Failed ends the attempt as a failure: it counts until the window ends.
func (a *Attempts) Failed(ctx context.Context, at Attempt) error { return a.end(ctx, at, "fail") }

// Done ends the attempt without counting it (it succeeded, or it could
// not be decided, as when the database was down).
func (a *Attempts) Done(ctx context.Context, at Attempt) error { return a.end(ctx, at, "done") }

// Clear ends the attempt as a success that also forgets the key's
// failures (a login with the right password).
func (a *Attempts) Clear(ctx context.Context, at Attempt) error { return a.end(ctx, at, "clear") }

// end records the attempt's outcome; when Redis does not take it, the
// next Begin records it.
func (a *Attempts) end(ctx context.Context, at Attempt, outcome string) error {
	if at.id == "" {
		return nil // a refused attempt: nothing was begun
	}
	err := a.unrecorded.run(ctx, func(ctx context.Context) error {
		return endScript.Run(ctx, a.rdb, a.keys(at.key), at.id, outcome, a.Window.Milliseconds()).Err()
	})
	if err != nil {
		return fmt.Errorf("ratelimit: end attempt (recorded by the next one): %w", err)
	}
	return nil
}

func (a *Attempts) keys(key string) []string {
	return []string{a.prefix + key, a.prefix + key + ":pending"}
}
