package authn

import (
	"sync"
	"time"
)

// verifiedCache remembers tokens whose signature and claims were checked, so
// a client reusing its token (the normal case) costs a map lookup instead of
// an Ed25519 verification and a JSON parse. Expiry is re-checked on every hit
// and revocation is never cached. Entries live at most maxAge, so a key
// withdrawn from the JWKS stops being accepted within that time.
type verifiedCache struct {
	mu     sync.Mutex
	m      map[string]cachedToken
	max    int
	maxAge time.Duration
}

type cachedToken struct {
	p     Principal
	until time.Time
}

// newVerifiedCache holds at most max tokens. The map grows with the tokens
// seen: sized for max up front it cost every service 1.1 MB of idle heap.
func newVerifiedCache(max int, maxAge time.Duration) *verifiedCache {
	return &verifiedCache{m: map[string]cachedToken{}, max: max, maxAge: maxAge}
}

func (c *verifiedCache) get(raw string, now time.Time) (Principal, bool) {
	c.mu.Lock()
	e, ok := c.m[raw]
	c.mu.Unlock()
	if !ok || !now.Before(e.until) {
		return Principal{}, false
	}
	return e.p, true
}

func (c *verifiedCache) put(raw string, p Principal, now time.Time) {
	until := now.Add(c.maxAge)
	if p.ExpiresAt.Before(until) {
		until = p.ExpiresAt
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		for k, e := range c.m {
			if !now.Before(e.until) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= c.max {
			// Still full of live tokens: start over rather than track recency;
			// the next requests simply verify again.
			clear(c.m)
		}
	}
	c.m[raw] = cachedToken{p: p, until: until}
}
