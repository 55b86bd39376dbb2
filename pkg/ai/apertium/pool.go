package apertium

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultIdleTimeout is how long an unused warm pipeline stays running.
const DefaultIdleTimeout = time.Minute

// errClosed is returned by the warm path of an engine after Close.
var errClosed = errors.New("apertium: engine closed")

// modePool holds the warm pipelines of one mode: at most max exist, idle ones wait in a stack
// (the most recently used is reused first, so that surplus pipelines go idle and are stopped).
// A batch of requests holds one of the max slots while it uses a pipeline; a pipeline is started
// only when no idle one is left, which keeps busy plus idle pipelines within max. Requests wait
// in a queue; whoever gets a slot takes every request queued by then (see translateWarm), so
// that requests arriving together while the pipelines are busy share one write and one flush.
type modePool struct {
	mode  string
	cmds  [][]string
	slots chan struct{}

	mu     sync.Mutex
	idle   []*pipeline
	queue  []*warmJob // requests waiting for a pipeline (see translateWarm)
	closed bool

	requests, writes atomic.Int64 // served requests, and the writes to pipelines they took
}

func newModePool(mode string, cmds [][]string, max int) *modePool {
	return &modePool{mode: mode, cmds: cmds, slots: make(chan struct{}, max)}
}

// warmJob is one request's deformatted inputs waiting in a pool's queue for a pipeline.
type warmJob struct {
	ctx    context.Context
	inputs []string
	size   int // bytes of inputs
	done   chan struct{}
	out    []string
	err    error
	stderr string
	taken  bool // guarded by the pool's mutex: a batch has it
}

// maxBatchBytes bounds the inputs of the requests merged into one write (a request larger
// than that still goes alone).
const maxBatchBytes = 256 << 10

// enqueue adds j to the requests waiting for a pipeline.
func (mp *modePool) enqueue(j *warmJob) {
	mp.mu.Lock()
	mp.queue = append(mp.queue, j)
	mp.mu.Unlock()
}

// withdraw takes j out of the queue; false when a batch has taken it already.
func (mp *modePool) withdraw(j *warmJob) bool {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if j.taken {
		return false
	}
	mp.queue = slices.DeleteFunc(mp.queue, func(q *warmJob) bool { return q == j })
	j.taken = true
	return true
}

// taken reports whether a batch has taken j.
func (mp *modePool) taken(j *warmJob) bool {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	return j.taken
}

// takeBatch takes the queued requests, oldest first, up to maxBatchBytes of inputs (at least
// one request): those that arrived together share one write to a pipeline.
func (mp *modePool) takeBatch() []*warmJob {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	n, size := 0, 0
	for n < len(mp.queue) && (n == 0 || size+mp.queue[n].size <= maxBatchBytes) {
		size += mp.queue[n].size
		n++
	}
	batch := slices.Clone(mp.queue[:n])
	for _, j := range batch {
		j.taken = true
	}
	clear(mp.queue[:n])
	mp.queue = mp.queue[n:]
	if len(mp.queue) == 0 {
		mp.queue = nil
	}
	return batch
}

// take returns a pipeline for the exclusive use of a caller that holds one of the slots; put
// or kill gives it back. With fresh, an idle pipeline is not reused: one is stopped and a new
// one started in its place.
func (mp *modePool) take(fresh bool) (*pipeline, error) {
	mp.mu.Lock()
	if mp.closed {
		mp.mu.Unlock()
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
	return startPipeline(mp.cmds)
}

// put returns a healthy pipeline to the idle stack (the caller still holds its slot).
func (mp *modePool) put(p *pipeline, now time.Time) {
	mp.mu.Lock()
	closed := mp.closed
	if !closed {
		p.lastUsed = now
		mp.idle = append(mp.idle, p)
	}
	mp.mu.Unlock()
	if closed {
		p.kill()
	}
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
