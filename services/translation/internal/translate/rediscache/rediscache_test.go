package rediscache

import (
	"context"
	"testing"
	"time"

	"supportplatform.dev/pkg/redistest"

	"github.com/redis/go-redis/v9"

	"supportplatform.dev/services/translation/internal/translate"
)

// customer is the tenant the tests translate for.
const customer = int64(42)

var _ translate.Cache = (*Cache)(nil)

// newTestCache connects to the real Redis (TEST_REDIS_URL, see redistest) with a prefix of
// its own, and deletes the test's keys afterwards.
func newTestCache(t *testing.T) (*Cache, *redis.Client, string) {
	t.Helper()
	rdb, prefix := redistest.Open(t, "translation")
	return New(rdb, prefix), rdb, prefix
}

func TestSetGet(t *testing.T) {
	c, rdb, prefix := newTestCache(t)
	ctx := context.Background()
	key := translate.CacheKey(customer, "Hello", "", "es", translate.ModePlain)

	if _, ok, err := c.Get(ctx, key); ok || err != nil {
		t.Fatalf("Get before Set = %v, %v; want a miss", ok, err)
	}
	if err := c.Set(ctx, key, "Hola ñ 你好", time.Minute); err != nil {
		t.Fatal(err)
	}
	got, ok, err := c.Get(ctx, key)
	if err != nil || !ok || got != "Hola ñ 你好" {
		t.Fatalf("Get = %q, %v, %v", got, ok, err)
	}
	ttl, err := rdb.TTL(ctx, prefix+key).Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Fatalf("stored TTL = %v, %v; want (0, 1m]", ttl, err)
	}
	if n, _ := rdb.Exists(ctx, key).Result(); n != 0 {
		t.Fatal("key stored without its prefix")
	}
}

func TestExpiry(t *testing.T) {
	c, _, _ := newTestCache(t)
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		_, ok, err := c.Get(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("entry did not expire")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestZeroTTLStoresNothing(t *testing.T) {
	c, _, _ := newTestCache(t)
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.Get(ctx, "k"); ok {
		t.Fatal("a zero TTL stored an entry")
	}
}

func TestPrefixesIsolate(t *testing.T) {
	a, _, _ := newTestCache(t)
	b, _, _ := newTestCache(t)
	ctx := context.Background()
	if err := a.Set(ctx, "same", "from a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := b.Get(ctx, "same"); ok {
		t.Fatal("a key written under one prefix was read under another")
	}
}

func TestUnreachableRedisReportsError(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	c := New(rdb, "x:")
	if _, _, err := c.Get(context.Background(), "k"); err == nil {
		t.Fatal("Get against a closed port returned no error")
	}
	if err := c.Set(context.Background(), "k", "v", time.Minute); err == nil {
		t.Fatal("Set against a closed port returned no error")
	}
}
