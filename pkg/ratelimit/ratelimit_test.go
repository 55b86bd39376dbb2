package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"supportplatform.dev/pkg/redistest"
)

func testRedis(t *testing.T) (*redis.Client, string) {
	t.Helper()
	rdb := redis.NewClient(redistest.Options(t))
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("redis: %v", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "test:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := rdb.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			rdb.Del(ctx, keys...)
		}
		rdb.Close()
	})
	return rdb, prefix
}

func TestLimiter(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := testRedis(t)
	l := New(rdb, prefix, 3, 300*time.Millisecond)
	for i := 1; i <= 3; i++ {
		r, err := l.Hit(ctx, "k")
		if err != nil || !r.Allowed || r.Count != i {
			t.Fatalf("hit %d: %+v %v", i, r, err)
		}
	}
	r, _ := l.Hit(ctx, "k")
	if r.Allowed || r.RetryAfter <= 0 || r.RetryAfter > 300*time.Millisecond {
		t.Fatalf("over limit: %+v", r)
	}
	if r, _ := l.Hit(ctx, "other"); !r.Allowed || r.Count != 1 {
		t.Fatalf("keys must be independent: %+v", r)
	}
	time.Sleep(350 * time.Millisecond) // the window is a Redis TTL; nothing to inject
	if r, _ := l.Hit(ctx, "k"); !r.Allowed || r.Count != 1 {
		t.Fatalf("window should have expired: %+v", r)
	}
}

// TestParallelHitsCountEveryOne: the count and the decision are one atomic
// step, so parallel callers cannot all see room under the limit.
func TestParallelHitsCountEveryOne(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := testRedis(t)
	l := New(rdb, prefix, 5, time.Minute)
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := l.Hit(ctx, "k")
			if err != nil {
				t.Error(err)
				return
			}
			if r.Allowed {
				allowed.Add(1)
			} else if r.RetryAfter <= 0 {
				t.Errorf("refused without RetryAfter: %+v", r)
			}
		}()
	}
	wg.Wait()
	if n := allowed.Load(); n != 5 {
		t.Fatalf("%d of 50 parallel hits allowed, want 5", n)
	}
}
