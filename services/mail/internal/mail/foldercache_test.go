package mail

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLookupCache(t *testing.T) {
	now := time.Date(2025, 3, 4, 5, 6, 8, 0, time.UTC)
	c := newLookupCache(100, 1<<20, 30*time.Second, 10*time.Second)
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
	l := newKeyedLimiter(10, 1<<20, 2, 3)
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

// The limiter and the cache are bounded in bytes as well as in entries:
// long keys fill the byte budget long before the entry count.
func TestByteBounds(t *testing.T) {
	now := time.Date(2025, 3, 4, 5, 6, 8, 0, time.UTC)
	const maxBytes = 64 << 10
	l := newKeyedLimiter(10000, maxBytes, 2, 3)
	c := newLookupCache(10000, maxBytes, 30*time.Second, 10*time.Second)
	long := strings.Repeat("k", 1000)
	for i := range 5000 {
		key := long + strconv.Itoa(i)
		l.allow(key, now)
		c.put(key, []Target{{ClientState: long}}, now)
		if _, b := l.size(); b > maxBytes {
			t.Fatalf("limiter holds %d bytes, bound %d", b, maxBytes)
		}
		if _, b := c.size(); b > maxBytes {
			t.Fatalf("cache holds %d bytes, bound %d", b, maxBytes)
		}
	}
	// The accounting matches what is held.
	keys, b := l.size()
	want := 0
	for k := range l.buckets {
		want += limiterKeyOverhead + len(k)
	}
	if b != want || keys == 0 {
		t.Errorf("limiter counts %d bytes for %d keys, holds %d", b, keys, want)
	}
	entries, cb := c.size()
	want = 0
	for k, e := range c.entries {
		want += entryBytes(k, e.targets)
	}
	if cb != want || entries == 0 {
		t.Errorf("cache counts %d bytes for %d entries, holds %d", cb, entries, want)
	}
	c.forget(long + "4999")
	if _, after := c.size(); after >= cb {
		t.Errorf("forget left the bytes at %d", after)
	}
}
