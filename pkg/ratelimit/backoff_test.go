package ratelimit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestBackoffSlowsDownWithoutLockingOut(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := testRedis(t)
	b := NewBackoff(rdb, prefix, 3, time.Second, 8*time.Second, time.Hour)
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	try := func(wantWait time.Duration) {
		t.Helper()
		r, err := b.Begin(ctx, "addr", now)
		if err != nil {
			t.Fatal(err)
		}
		if r.Allowed != (wantWait == 0) || r.RetryAfter != wantWait {
			t.Fatalf("at %v: %+v, want wait %v", now, r, wantWait)
		}
	}
	try(0)
	try(0)
	try(0) // the third sets the first delay
	try(time.Second)
	now = now.Add(999 * time.Millisecond)
	try(time.Millisecond)
	// Waiting out each delay always gets an attempt; the delay doubles up
	// to the maximum.
	for _, d := range []time.Duration{time.Millisecond, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second} {
		now = now.Add(d)
		try(0)
	}
	try(8 * time.Second)
	// An undecided attempt is taken back; a clear forgets everything.
	if err := b.Clear(ctx, "addr"); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		try(0)
		if err := b.Undo(ctx, "addr"); err != nil {
			t.Fatal(err)
		}
	}
	if ttl := rdb.PTTL(ctx, prefix+"addr").Val(); ttl <= 0 || ttl > time.Hour {
		t.Fatalf("key TTL %v: the state must expire", ttl)
	}
}

// Parallel attempts take turns: only the free ones and none of the rest go
// through at one instant.
func TestBackoffParallelAttemptsTakeTurns(t *testing.T) {
	rdb, prefix := testRedis(t)
	b := NewBackoff(rdb, prefix, 5, time.Second, time.Minute, time.Hour)
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	allowed := 0
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			r, err := b.Begin(context.Background(), "addr", now)
			if err != nil {
				t.Error(err)
				return
			}
			if r.Allowed {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if allowed != 5 {
		t.Fatalf("%d of 40 parallel attempts went through, want 5", allowed)
	}
}

// The Clears and Undos that Redis did not take are recorded before the
// next attempt begins: logins that succeeded while Redis went down do not
// leave their attempts counted, so the address is not slowed down (and
// its parallel logins refused) once Redis is back.
func TestBackoffEndsRecordedAfterRedisComesBack(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := testRedis(t)
	proxy, addr := newRedisProxy(t)
	via := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { via.Close() })
	b := NewBackoff(via, prefix, 2, time.Minute, time.Hour, time.Hour)
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for range 2 {
		if r, err := b.Begin(ctx, "addr", now); err != nil || !r.Allowed {
			t.Fatalf("begin: %+v %v", r, err)
		}
	}
	proxy.set(false)
	if err := b.Clear(ctx, "addr"); err == nil {
		t.Fatal("a clear while Redis is away must report an error")
	}
	if _, err := b.Begin(ctx, "addr", now); err == nil {
		t.Fatal("a begin while Redis is away must fail")
	}
	proxy.set(true)

	// Without the backlog the key would hold two attempts, and two
	// parallel logins would find it waiting a minute.
	for i := range 2 {
		r, err := b.Begin(ctx, "addr", now)
		if err != nil || !r.Allowed || r.Count != i+1 {
			t.Fatalf("begin %d after Redis is back: %+v %v, want allowed as attempt %d", i, r, err, i+1)
		}
	}
	if err := b.Undo(ctx, "addr"); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.HGet(ctx, prefix+"addr", "tries").Int(); n != 1 {
		t.Fatalf("tries %d after one undo, want 1", n)
	}
}
