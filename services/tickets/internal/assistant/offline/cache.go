package offline

import (
	"hash/maphash"
	"sync"
	"time"
)

// cache keeps recently built values (indexes of a customer's topics and
// documents, translations of a message) by a hash of their input, so that
// the messages of one customer do not re-tokenise the same topics. Entries
// expire after ttl on the injected clock; when full, expired entries go
// first, then the oldest.
type cache[V any] struct {
	mu      sync.Mutex
	now     func() time.Time
	ttl     time.Duration
	max     int
	entries map[uint64]cacheEntry[V]
}

type cacheEntry[V any] struct {
	v     V
	added time.Time
}

func newCache[V any](now func() time.Time, ttl time.Duration, max int) *cache[V] {
	return &cache[V]{now: now, ttl: ttl, max: max, entries: map[uint64]cacheEntry[V]{}}
}

func (c *cache[V]) get(k uint64) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok || c.now().Sub(e.added) >= c.ttl {
		var zero V
		return zero, false
	}
	return e.v, true
}

func (c *cache[V]) put(k uint64, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if _, ok := c.entries[k]; !ok && len(c.entries) >= c.max {
		var oldest uint64
		var oldestAt time.Time
		first := true
		for key, e := range c.entries {
			if now.Sub(e.added) >= c.ttl {
				delete(c.entries, key)
				continue
			}
			if first || e.added.Before(oldestAt) {
				oldest, oldestAt, first = key, e.added, false
			}
		}
		if len(c.entries) >= c.max {
			delete(c.entries, oldest)
		}
	}
	c.entries[k] = cacheEntry[V]{v: v, added: now}
}

// hasher builds cache keys from strings; a separator that cannot occur in
// text keeps ("ab", "c") and ("a", "bc") apart.
type hasher struct{ h maphash.Hash }

func newHasher(seed maphash.Seed, kind string) *hasher {
	h := &hasher{}
	h.h.SetSeed(seed)
	h.add(kind)
	return h
}

func (h *hasher) add(ss ...string) {
	for _, s := range ss {
		_, _ = h.h.WriteString(s)
		_ = h.h.WriteByte(0)
	}
}

func (h *hasher) addInt(n int64) {
	var b [8]byte
	for i := range b {
		b[i] = byte(n >> (8 * i))
	}
	_, _ = h.h.Write(b[:])
}

func (h *hasher) sum() uint64 { return h.h.Sum64() }
