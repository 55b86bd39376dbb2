// Package clocktest is the clock tests inject where code takes a
// `now func() time.Time`: it stands still until the test moves it, so
// expiry, renewal and backoff are tested without sleeping.
package clocktest

import (
	"sync"
	"time"
)

// Clock is a settable clock, safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock showing t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time (pass c.Now where code wants a now func).
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set shows t from now on.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}
