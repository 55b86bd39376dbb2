package mail

import (
	"strconv"
	"testing"
	"time"
)

func TestLookupCache(t *testing.T) {
	now := time.Date(2025, 3, 4, 5, 6, 8, 0, time.UTC)
	c := newLookupCache(100, 30*time.Second, 10*time.Second)
	found := []Target{{Folder: Folder{ID: 1}}}
	c.put("known", found, now)
	c.put("unknown", nil, now)
	tests := []struct {
		name      string
		key       string
		after     time.Duration
		wantHit   bool
		wantFound bool
	}{
		{"found, fresh", "known", 29 * time.Second, true, true},
		{"found, expired", "known", 30 * time.Second, false, false},
		{"not found, fresh", "unknown", 9 * time.Second, true, false},
		{"not found, expired", "unknown", 10 * time.Second, false, false},
		{"never seen", "other", 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, hit := c.get(tt.key, now.Add(tt.after))
			if hit != tt.wantHit || (len(ts) > 0) != tt.wantFound {
				t.Fatalf("get = %v, %v", ts, hit)
			}
		})
	}
	if ts := c.stale("known"); len(ts) != 1 {
		t.Errorf("stale entry lost: %v", ts)
	}
	if ts := c.stale("unknown"); len(ts) != 0 {
		t.Errorf("stale of a negative entry = %v", ts)
	}
	for i := range 1000 {
		c.put(strconv.Itoa(i), nil, now)
		if n := c.len(); n > 100 {
			t.Fatalf("cache holds %d entries, bound 100", n)
		}
	}
}

func TestKeyedLimiter(t *testing.T) {
	now := time.Date(2025, 3, 4, 5, 6, 8, 0, time.UTC)
	l := newKeyedLimiter(10, 2, 3)
	allowed := 0
	for range 10 {
		if l.allow("a", now) {
			allowed++
		}
	}
	if allowed != 3 {
		t.Fatalf("allowed %d, want the burst 3", allowed)
	}
	if !l.allow("b", now) {
		t.Error("another key shares a's bucket")
	}
	if !l.allow("a", now.Add(500*time.Millisecond)) || l.allow("a", now.Add(500*time.Millisecond)) {
		t.Error("after 0.5 s at 2/s, want exactly one more token")
	}
	for i := range 1000 {
		l.allow(strconv.Itoa(i), now)
		if n := len(l.buckets); n > 10 {
			t.Fatalf("limiter holds %d keys, bound 10", n)
		}
	}
}
