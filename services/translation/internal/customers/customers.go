// Package customers answers whether the token's customer still exists, by
// asking the auth service over NATS; a short cache keeps that off the hot path.
package customers

import (
	"context"
	"sync"
	"time"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
)

// Checker caches positive answers for TTL; a deleted customer is therefore
// refused at most TTL after its deletion. Negative answers are not cached.
type Checker struct {
	bus *natsbus.Bus
	ttl time.Duration
	now func() time.Time

	mu   sync.Mutex
	seen map[int64]time.Time
}

// New returns a checker.
func New(bus *natsbus.Bus, ttl time.Duration, now func() time.Time) *Checker {
	return &Checker{bus: bus, ttl: ttl, now: now, seen: map[int64]time.Time{}}
}

// Require returns NotFound when the customer no longer exists.
func (c *Checker) Require(ctx context.Context, customerID int64) error {
	c.mu.Lock()
	until, ok := c.seen[customerID]
	c.mu.Unlock()
	if ok && c.now().Before(until) {
		return nil
	}
	reply, err := natsbus.Request[contracts.CustomerExistsRequest, contracts.CustomerExistsReply](ctx, c.bus,
		contracts.RPCCustomerExists, contracts.CustomerExistsRequest{CustomerID: customerID})
	if err != nil {
		return err
	}
	if !reply.Exists {
		return apperr.E(apperr.NotFound, "customer not found")
	}
	if c.ttl > 0 {
		c.mu.Lock()
		if len(c.seen) > 100_000 {
			c.seen = map[int64]time.Time{}
		}
		c.seen[customerID] = c.now().Add(c.ttl)
		c.mu.Unlock()
	}
	return nil
}
