// Package redistest gives tests the real Redis under a key prefix of their
// own, whose keys are deleted when the test ends. TEST_REDIS_URL names it
// (default redis://127.0.0.1:6379/0), for every test that needs Redis, as
// TEST_DATABASE_URL names PostgreSQL (pgtest).
package redistest

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"supportplatform.dev/pkg/randid"
)

// DefaultURL is the test Redis when TEST_REDIS_URL is not set.
const DefaultURL = "redis://127.0.0.1:6379/0"

// URL is the test Redis: TEST_REDIS_URL or DefaultURL.
func URL() string {
	if u := os.Getenv("TEST_REDIS_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Options are URL's connection options (failing t when it does not parse).
func Options(t testing.TB) *redis.Options {
	t.Helper()
	opt, err := redis.ParseURL(URL())
	if err != nil {
		t.Fatalf("TEST_REDIS_URL: %v", err)
	}
	return opt
}

// Open connects (failing t when Redis does not answer) and returns the
// client and a fresh prefix "test:<label>:<random>:".
func Open(t testing.TB, label string) (*redis.Client, string) {
	t.Helper()
	opt := Options(t)
	rdb := redis.NewClient(opt)
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("redis at %s: %v", opt.Addr, err)
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
