package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Backoff slows the attempts on one key down instead of stopping them: the
// first After attempts (since the key's last Clear, within Window) go
// through at once; from then on each attempt must wait until the previous
// one's delay has passed, and the delay doubles with every attempt, from
// Min up to Max. Parallel attempts take turns (the delay is set when an
// attempt begins), so spreading guesses over many clients does not speed
// them up, while whoever waits out the delay always gets an attempt: a
// slowdown, never a lockout.
//
// Times come from the caller (an injected clock); the state is one small
// hash per key that expires Window after the last attempt.
type Backoff struct {
	rdb      *redis.Client
	prefix   string
	After    int
	Min, Max time.Duration
	Window   time.Duration

	// unrecorded are the Undos and Clears Redis did not take: the next
	// Begin records them first, so attempts that were under way when
	// Redis went down do not slow the key down once it is back.
	unrecorded backlog
}

// NewBackoff returns a backoff whose keys start with prefix.
func NewBackoff(rdb *redis.Client, prefix string, after int, min, max, window time.Duration) *Backoff {
	return &Backoff{rdb: rdb, prefix: prefix, After: after, Min: min, Max: max, Window: window}
}

// backoffScript: KEYS[1] hash {tries, next}. ARGV: now ms, after, min ms,
// max ms, window ms. Returns {1, tries} when the attempt may go (and
// counts it), {0, wait ms} when it must wait.
var backoffScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local after = tonumber(ARGV[2])
local tries = tonumber(redis.call('HGET', KEYS[1], 'tries') or '0')
local nxt = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
if tries >= after and now < nxt then return {0, nxt - now} end
tries = tries + 1
redis.call('HSET', KEYS[1], 'tries', tries)
if tries >= after then
  local d = tonumber(ARGV[3])
  local max = tonumber(ARGV[4])
  for i = 1, tries - after do
    d = d * 2
    if d >= max then break end
  end
  if d > max then d = max end
  redis.call('HSET', KEYS[1], 'next', now + d)
end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {1, tries}
`)

// Begin counts an attempt on key at now, or refuses it (Allowed false)
// with the wait until the key's next attempt.
func (b *Backoff) Begin(ctx context.Context, key string, now time.Time) (Result, error) {
	if err := b.unrecorded.flush(ctx); err != nil {
		return Result{}, fmt.Errorf("ratelimit: backoff: %w", err)
	}
	v, err := backoffScript.Run(ctx, b.rdb, []string{b.prefix + key}, now.UnixMilli(), b.After,
		b.Min.Milliseconds(), b.Max.Milliseconds(), b.Window.Milliseconds()).Int64Slice()
	if err != nil {
		return Result{}, fmt.Errorf("ratelimit: backoff: %w", err)
	}
	if v[0] == 0 {
		return Result{Allowed: false, RetryAfter: max(time.Duration(v[1])*time.Millisecond, time.Millisecond)}, nil
	}
	return Result{Allowed: true, Count: int(v[1])}, nil
}

// undoScript takes one attempt back (never below zero).
var undoScript = redis.NewScript(`
local n = tonumber(redis.call('HGET', KEYS[1], 'tries') or '0')
if n > 0 then redis.call('HINCRBY', KEYS[1], 'tries', -1) end
return 1
`)

// Undo takes back an attempt that could not be decided (the database was
// down), so an outage does not slow the key down. When Redis does not
// take it, the next Begin records it.
func (b *Backoff) Undo(ctx context.Context, key string) error {
	err := b.unrecorded.run(ctx, func(ctx context.Context) error {
		return undoScript.Run(ctx, b.rdb, []string{b.prefix + key}).Err()
	})
	if err != nil {
		return fmt.Errorf("ratelimit: backoff undo (recorded by the next begin): %w", err)
	}
	return nil
}

// Clear forgets the key's attempts (the right password). When Redis does
// not take it, the next Begin records it.
func (b *Backoff) Clear(ctx context.Context, key string) error {
	err := b.unrecorded.run(ctx, func(ctx context.Context) error {
		return b.rdb.Del(ctx, b.prefix+key).Err()
	})
	if err != nil {
		return fmt.Errorf("ratelimit: backoff clear (recorded by the next begin): %w", err)
	}
	return nil
}
