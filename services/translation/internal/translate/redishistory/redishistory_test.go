package redishistory

import (
	"context"
	"math"
	"testing"
	"time"

	"supportplatform.dev/pkg/redistest"

	"github.com/redis/go-redis/v9"

	"supportplatform.dev/services/translation/internal/translate"
)

var _ translate.SourceHistory = (*History)(nil)

// newTestHistory connects to the real Redis (TEST_REDIS_URL, see redistest) with a prefix
// of its own, and deletes the test's keys afterwards.
func newTestHistory(t *testing.T) (*History, *redis.Client, string) {
	t.Helper()
	rdb, prefix := redistest.Open(t, "translation:srclang")
	return New(rdb, prefix, time.Hour), rdb, prefix
}

func TestSharesPerCustomer(t *testing.T) {
	h, rdb, prefix := newTestHistory(t)
	ctx := context.Background()
	if got, err := h.Shares(ctx, 1); err != nil || len(got) != 0 {
		t.Fatalf("Shares of an unknown customer = %v, %v; want none", got, err)
	}
	for _, l := range []string{"en", "en", "en", "es"} {
		if err := h.Record(ctx, 1, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Record(ctx, 2, "fr"); err != nil {
		t.Fatal(err)
	}
	got, err := h.Shares(ctx, 1)
	if err != nil || len(got) != 2 || got["en"] != 0.75 || got["es"] != 0.25 {
		t.Fatalf("Shares(1) = %v, %v; want en 0.75, es 0.25", got, err)
	}
	if got, _ := h.Shares(ctx, 2); len(got) != 1 || got["fr"] != 1 {
		t.Fatalf("Shares(2) = %v; customers must not share a history", got)
	}
	ttl, err := rdb.PTTL(ctx, prefix+"1").Result()
	if err != nil || ttl <= 59*time.Minute || ttl > time.Hour {
		t.Fatalf("TTL = %v, %v; want about the configured hour", ttl, err)
	}
}

func TestOldTextsFade(t *testing.T) {
	h, _, _ := newTestHistory(t)
	h.halveAt = 8
	ctx := context.Background()
	// A customer that wrote Spanish and then switched to English.
	for range 7 {
		if err := h.Record(ctx, 7, "es"); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		if err := h.Record(ctx, 7, "en"); err != nil {
			t.Fatal(err)
		}
	}
	got, err := h.Shares(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	// es: 7 -> 3.5 -> 1.75 -> dropped below one by the third halving; en dominates.
	if _, ok := got["es"]; ok || math.Abs(got["en"]-1) > 1e-9 {
		t.Fatalf("Shares = %v; want the old language gone after repeated halving", got)
	}
}
