package authn

import (
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestVerifiedCacheGrowsWithUse: an empty cache costs next to nothing (every
// service has one), and it still holds at most max tokens.
func TestVerifiedCacheGrowsWithUse(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	caches := make([]*verifiedCache, 10)
	for i := range caches {
		caches[i] = newVerifiedCache(10_000, time.Minute)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / uint64(len(caches)); per > 16<<10 {
		t.Fatalf("an empty cache allocates %d bytes, want it to grow with use", per)
	}
	c := newVerifiedCache(100, time.Minute)
	now := time.Now()
	for i := range 1000 {
		c.put("token-"+strconv.Itoa(i), Principal{ExpiresAt: now.Add(time.Hour)}, now)
	}
	if n := len(c.m); n > 100 {
		t.Fatalf("cache holds %d tokens, want at most 100", n)
	}
	if _, ok := c.get("token-999", now); !ok {
		t.Fatal("the last token put is not cached")
	}
}
