package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func testRedis(t *testing.T) (*redis.Client, string) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
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
	if r, _ := l.Peek(ctx, "k"); r.Allowed || r.RetryAfter <= 0 {
		t.Fatalf("peek after limit: %+v", r)
	}
	r, _ := l.Hit(ctx, "k")
	if r.Allowed || r.RetryAfter <= 0 || r.RetryAfter > 300*time.Millisecond {
		t.Fatalf("over limit: %+v", r)
	}
	if r, _ := l.Peek(ctx, "other"); !r.Allowed {
		t.Fatal("keys must be independent")
	}
	time.Sleep(350 * time.Millisecond) // the window is a Redis TTL; nothing to inject
	if r, _ := l.Peek(ctx, "k"); !r.Allowed {
		t.Fatalf("window should have expired: %+v", r)
	}
	_, _ = l.Hit(ctx, "k")
	if err := l.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if r, _ := l.Hit(ctx, "k"); r.Count != 1 {
		t.Fatalf("reset: %+v", r)
	}
}
