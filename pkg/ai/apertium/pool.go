package apertium

import (
	"context"
	"errors"
	"sync"
	"time"
)

// DefaultIdleTimeout is how long an unused warm pipeline stays running.
const DefaultIdleTimeout = time.Minute

// errClosed is returned by the warm path of an engine after Close.
var errClosed = errors.New("apertium: engine closed")

// modePool holds the warm pipelines of one mode: at most max exist, idle ones wait in a stack
// (the most recently used is reused first, so that surplus pipelines go idle and are stopped).
// A request holds one of the max slots while it uses a pipeline; a pipeline is started only when
// no idle one is left, which keeps busy plus idle pipelines within max.
type modePool struct {
	mode  string
	cmds  [][]string
	slots chan struct{}

	mu     sync.Mutex
	idle   []*pipeline
	closed bool
}

func newModePool(mode string, cmds [][]string, max int) *modePool {
	return &modePool{mode: mode, cmds: cmds, slots: make(chan struct{}, max)}
}

// acquire returns a pipeline for the caller's exclusive use; release or discard gives it back.
// With fresh, an idle pipeline is not reused: one is stopped and a new one started in its place.
func (mp *modePool) acquire(ctx context.Context, fresh bool) (*pipeline, error) {
	select {
	case mp.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	mp.mu.Lock()
	if mp.closed {
		mp.mu.Unlock()
		<-mp.slots
		return nil, errClosed
	}
	var p *pipeline
	if n := len(mp.idle); n > 0 {
		p = mp.idle[n-1]
		mp.idle = mp.idle[:n-1]
	}
	mp.mu.Unlock()
	if p != nil && !fresh {
		return p, nil
	}
	if p != nil {
		p.kill()
	}
	p, err := startPipeline(mp.cmds)
	if err != nil {
		<-mp.slots
		return nil, err
	}
	return p, nil
}

// release returns a healthy pipeline to the idle stack.
func (mp *modePool) release(p *pipeline, now time.Time) {
	mp.mu.Lock()
	closed := mp.closed
	if !closed {
		p.lastUsed = now
		mp.idle = append(mp.idle, p)
	}
	mp.mu.Unlock()
	<-mp.slots
	if closed {
		p.kill()
	}
}

// discard stops a pipeline that failed.
func (mp *modePool) discard(p *pipeline) {
	p.kill()
	<-mp.slots
}

// reap stops the pipelines idle since before cutoff and reports how many are left running idle.
func (mp *modePool) reap(cutoff time.Time) int {
	mp.mu.Lock()
	var stale []*pipeline
	kept := mp.idle[:0]
	for _, p := range mp.idle {
		if p.lastUsed.Before(cutoff) {
			stale = append(stale, p)
		} else {
			kept = append(kept, p)
		}
	}
	clear(mp.idle[len(kept):])
	mp.idle = kept
	left := len(kept)
	mp.mu.Unlock()
	for _, p := range stale {
		p.kill()
	}
	return left
}

// close stops the idle pipelines; busy ones are stopped when released.
func (mp *modePool) close() {
	mp.mu.Lock()
	mp.closed = true
	idle := mp.idle
	mp.idle = nil
	mp.mu.Unlock()
	for _, p := range idle {
		p.kill()
	}
}

// idlePids lists the process ids of the idle pipelines' programs (for tests and measurements).
func (mp *modePool) idlePids() [][]int {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	out := make([][]int, 0, len(mp.idle))
	for _, p := range mp.idle {
		pids := make([]int, 0, len(p.procs))
		for _, c := range p.procs {
			pids = append(pids, c.Process.Pid)
		}
		out = append(out, pids)
	}
	return out
}
