package offline

import (
	"hash/maphash"
	"sync"
	"time"
)

// cache keeps recently built values (indexes of a customer's topics and
// documents, translations of a message) by a hash of their input, so that
// the messages of one customer do not re-tokenise the same topics. Entries
// expire after ttl on the injected clock. The cache is bounded twice: by a
// number of entries and by a budget of cost (the bytes of text an entry was
// built from, which its size follows). When either is exceeded, expired
// entries go first, then the oldest. The cost bound is what keeps memory
// flat when a customer's topics keep changing: every change is a new key,
// and each index is as large as all the customer's topics together (a soak
// run with ever more topics grew the assistant from 333 MB to 1.9 GB with a
// bound on entries alone). A value costlier than the whole budget is not
// kept.
type cache[V any] struct {
	mu      sync.Mutex
	now     func() time.Time
	ttl     time.Duration
	max     int
	maxCost int64
	cost    int64
	entries map[uint64]cacheEntry[V]
}

type cacheEntry[V any] struct {
	v     V
	cost  int64
	added time.Time
}

func newCache[V any](now func() time.Time, ttl time.Duration, max int, maxCost int64) *cache[V] {
	return &cache[V]{now: now, ttl: ttl, max: max, maxCost: maxCost, entries: map[uint64]cacheEntry[V]{}}
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

// put keeps v under k at the given cost.
func (c *cache[V]) put(k uint64, v V, cost int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cost > c.maxCost {
		return
	}
	c.remove(k)
	now := c.now()
	if len(c.entries) >= c.max || c.cost+cost > c.maxCost {
		for key, e := range c.entries {
			if now.Sub(e.added) >= c.ttl {
				c.remove(key)
			}
		}
	}
	for len(c.entries) > 0 && (len(c.entries) >= c.max || c.cost+cost > c.maxCost) {
		var oldest uint64
		var oldestAt time.Time
		first := true
		for key, e := range c.entries {
			if first || e.added.Before(oldestAt) {
				oldest, oldestAt, first = key, e.added, false
			}
		}
		c.remove(oldest)
	}
	c.entries[k] = cacheEntry[V]{v: v, cost: cost, added: now}
	c.cost += cost
}

func (c *cache[V]) remove(k uint64) {
	if e, ok := c.entries[k]; ok {
		c.cost -= e.cost
		delete(c.entries, k)
	}
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
