package ratelimit

import (
	"context"
	"slices"
	"sync"
)

// backlog holds the ends of attempts that Redis did not take (it was
// down): the next Begin on the same limiter records them first, so that
// the attempts this process had under way when Redis went down neither
// keep counting nor lose their failures once it is back. The limiters'
// expiries are the backstop for the ends of a process that died.
type backlog struct {
	mu    sync.Mutex
	items []func(context.Context) error
}

// maxUnrecorded bounds the backlog; the oldest go first (their attempts
// have expired by then).
const maxUnrecorded = 1024

// run runs record; when Redis does not take it, it is kept for flush and
// the error is returned.
func (b *backlog) run(ctx context.Context, record func(context.Context) error) error {
	err := record(ctx)
	if err == nil {
		return nil
	}
	b.mu.Lock()
	b.items = append(b.items, record)
	if n := len(b.items); n > maxUnrecorded {
		b.items = slices.Delete(b.items, 0, n-maxUnrecorded)
	}
	b.mu.Unlock()
	return err
}

// flush records what is kept, oldest first. Begins wait for it, so none
// of them counts an attempt that has ended.
func (b *backlog) flush(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.items) > 0 {
		if err := b.items[0](ctx); err != nil {
			return err
		}
		b.items[0] = nil
		b.items = b.items[1:]
	}
	return nil
}
