package mail

import (
	"sync"
	"time"
)

// lookupCache remembers what a subscription id (or mailbox and folder)
// resolved to: found targets for a short positive TTL, nothing for a
// shorter negative one. It is bounded in entries and in estimated bytes:
// when full, expired entries go first, then arbitrary ones. A stale positive entry is harmless for its TTL: the
// import it queues is checked again by the import worker, and a changed
// client state only makes items look forged until the entry expires.
type lookupCache struct {
	mu      sync.Mutex
	entries map[string]cacheEntry
	max     int
	// maxBytes bounds bytes, the estimated memory of the entries.
	maxBytes, bytes int
	posTTL          time.Duration
	negTTL          time.Duration
}

type cacheEntry struct {
	targets []Target // empty: known not to exist
	expires time.Time
}

func newLookupCache(max, maxBytes int, posTTL, negTTL time.Duration) *lookupCache {
	return &lookupCache{entries: map[string]cacheEntry{}, max: max, maxBytes: maxBytes, posTTL: posTTL, negTTL: negTTL}
}

// entryBytes estimates what an entry holds: its key, the strings of its
// targets and fixed overheads.
func entryBytes(key string, targets []Target) int {
	b := cacheEntryOverhead + len(key)
	for _, t := range targets {
		b += cacheTargetOverhead + len(t.ClientState) + len(t.Folder.ExternalFolderID) + len(t.Folder.DisplayName) +
			len(t.Folder.SubscriptionID) + len(t.Channel.Name) + len(t.Channel.EmailAddress) + len(t.Channel.ProviderTenantID)
	}
	return b
}

// get returns the cached targets and whether there was a live entry.
// Expired entries stay until evicted (see stale).
func (c *lookupCache) get(key string, now time.Time) ([]Target, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !now.Before(e.expires) {
		return nil, false
	}
	return e.targets, true
}

// stale returns the targets of a found entry even past its TTL: what a
// known id resolved to is better than dropping its items while a flood of
// unknown ids has spent the lookup budget.
func (c *lookupCache) stale(key string) []Target {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[key].targets
}

func (c *lookupCache) put(key string, targets []Target, now time.Time) {
	ttl := c.posTTL
	if len(targets) == 0 {
		ttl = c.negTTL
	}
	size := entryBytes(key, targets)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(key)
	if len(c.entries) >= c.max || c.bytes+size > c.maxBytes {
		c.evict(now, size)
	}
	c.entries[key] = cacheEntry{targets: targets, expires: now.Add(ttl)}
	c.bytes += size
}

// remove deletes an entry and its bytes; c.mu is held.
func (c *lookupCache) remove(key string) {
	if e, ok := c.entries[key]; ok {
		c.bytes -= entryBytes(key, e.targets)
		delete(c.entries, key)
	}
}

func (c *lookupCache) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(key)
}

func (c *lookupCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// evict makes room for a tenth of the cache (entries and bytes) and an
// entry of size bytes: expired entries, then any.
func (c *lookupCache) evict(now time.Time, size int) {
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			c.remove(k)
		}
	}
	for k := range c.entries {
		if len(c.entries) < c.max-c.max/10 && c.bytes+size <= c.maxBytes-c.maxBytes/10 {
			break
		}
		c.remove(k)
	}
}

// size returns the entries and their estimated bytes.
func (c *lookupCache) size() (entries, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.bytes
}

// tokenBucket is a token bucket on the injected clock; its owner locks.
type tokenBucket struct {
	rate   float64 // tokens per second
	burst  float64
	tokens float64
	last   time.Time
}

func newTokenBucket(rate float64, burst int, now time.Time) *tokenBucket {
	return &tokenBucket{rate: rate, burst: float64(burst), tokens: float64(burst), last: now}
}

func (b *tokenBucket) refill(now time.Time) {
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(b.burst, b.tokens+d.Seconds()*b.rate)
		b.last = now
	}
}

// take spends a token if there is one.
func (b *tokenBucket) take(now time.Time) bool {
	b.refill(now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// refund gives a token back (the lookup it paid for found a folder).
func (b *tokenBucket) refund() { b.tokens = min(b.burst, b.tokens+1) }

// full reports whether the bucket has refilled completely: an idle key.
func (b *tokenBucket) full(now time.Time) bool {
	b.refill(now)
	return b.tokens >= b.burst
}

// keyedLimiter is a token bucket per key in a map bounded in entries and
// in estimated bytes (keys and overhead). When the map is full, idle keys
// (full buckets) are forgotten; if that is not enough the map starts over,
// which only ever hands out more tokens, never fewer.
type keyedLimiter struct {
	mu              sync.Mutex
	buckets         map[string]*tokenBucket
	max             int
	maxBytes, bytes int
	rate            float64
	burst           int
}

func newKeyedLimiter(max, maxBytes int, rate float64, burst int) *keyedLimiter {
	return &keyedLimiter{buckets: map[string]*tokenBucket{}, max: max, maxBytes: maxBytes, rate: rate, burst: burst}
}

func (l *keyedLimiter) allow(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		size := limiterKeyOverhead + len(key)
		full := func() bool { return len(l.buckets) >= l.max || l.bytes+size > l.maxBytes }
		if full() {
			for k, b := range l.buckets {
				if b.full(now) {
					delete(l.buckets, k)
					l.bytes -= limiterKeyOverhead + len(k)
				}
			}
			if full() {
				clear(l.buckets)
				l.bytes = 0
			}
		}
		b = newTokenBucket(l.rate, l.burst, now)
		l.buckets[key] = b
		l.bytes += size
	}
	return b.take(now)
}

// size returns the keys and their estimated bytes.
func (l *keyedLimiter) size() (keys, bytes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets), l.bytes
}
