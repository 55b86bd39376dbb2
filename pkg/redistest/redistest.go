// Package redistest gives tests the real Redis (REDIS_ADDR, default
// 127.0.0.1:6379) under a key prefix of their own, whose keys are deleted
// when the test ends.
package redistest

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"supportplatform.dev/pkg/randid"
)

// Open connects (failing t when Redis does not answer) and returns the
// client and a fresh prefix "test:<label>:<random>:".
func Open(t testing.TB, label string) (*redis.Client, string) {
	t.Helper()
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("redis at %s: %v", addr, err)
	}
	prefix := "test:" + label + ":" + randid.Hex(8) + ":"
	t.Cleanup(func() {
		keys, err := rdb.Keys(ctx, prefix+"*").Result()
		if err == nil && len(keys) > 0 {
			_ = rdb.Del(ctx, keys...).Err()
		}
		_ = rdb.Close()
	})
	return rdb, prefix
}
