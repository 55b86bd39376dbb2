package apertium

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// pool returns mode's pool of warm pipelines, or nil when the mode cannot run warm (the reason
// is logged once and the mode is served one-shot).
func (e *Engine) pool(ctx context.Context, mode string) *modePool {
	e.warmMu.Lock()
	defer e.warmMu.Unlock()
	if p, ok := e.pools[mode]; ok {
		return p
	}
	if _, cold := e.coldModes[mode]; cold {
		return nil
	}
	cmds, err := e.warmCommands(ctx, mode)
	if err != nil {
		if ctx.Err() != nil {
			return nil // not the mode's fault; try again next time
		}
		e.coldModes[mode] = err
		e.cfg.Logger.Warn("apertium: mode served one-shot, not warm", "mode", mode, "err", err)
		return nil
	}
	p := newModePool(mode, cmds, e.cfg.MaxProcesses)
	if e.closed {
		p.closed = true
	}
	e.pools[mode] = p
	if !e.reaping && !e.closed {
		e.reaping = true
		go e.reapLoop()
	}
	return p
}

// translateWarm sends the texts through a warm pipeline of the pool. The request waits in the
// pool's queue; whichever waiting request gets a free slot first takes every request queued by
// then and sends them all in one write (runBatch), so that concurrent requests of one mode that
// arrive together while the pipelines are busy share a flush instead of waiting for one each.
// A lone request on an idle pool goes at once, alone.
func (e *Engine) translateWarm(ctx context.Context, pool *modePool, texts []string) ([]string, error) {
	j := &warmJob{ctx: ctx, inputs: make([]string, len(texts)), done: make(chan struct{})}
	for i, t := range texts {
		j.inputs[i] = deformatTxt(t)
		j.size += len(j.inputs[i])
	}
	pool.enqueue(j)
	slots := pool.slots
	for {
		select {
		case <-j.done:
			if j.err != nil {
				if ctx.Err() != nil {
					return nil, &RunError{Mode: pool.mode, Err: ctx.Err()}
				}
				return nil, &RunError{Mode: pool.mode, Stderr: j.stderr, Err: j.err}
			}
			return j.out, nil
		case <-ctx.Done():
			// Taken by a batch already: the batch stops once every request of it has gone.
			pool.withdraw(j)
			return nil, &RunError{Mode: pool.mode, Err: ctx.Err()}
		case slots <- struct{}{}:
			if batch := pool.takeBatch(); len(batch) > 0 {
				e.runBatch(pool, batch)
			}
			<-pool.slots
			// Once a batch (this one's or another's) has this request, only its answer is
			// awaited: a nil channel takes no more slots.
			if pool.taken(j) {
				slots = nil
			}
		}
	}
}

// runBatch sends the inputs of a batch of requests through one pipeline in one write, and
// hands each request its answers. A pipeline that fails is killed and the batch retried once on
// a fresh one. The batch goes on while any of its requests still waits for it.
func (e *Engine) runBatch(pool *modePool, batch []*warmJob) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(batch[0].ctx))
	defer cancel()
	var waiting atomic.Int32
	waiting.Store(int32(len(batch)))
	for _, j := range batch {
		stop := context.AfterFunc(j.ctx, func() {
			if waiting.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	var inputs []string
	for _, j := range batch {
		inputs = append(inputs, j.inputs...)
	}
	out, stderr, err := e.translateInputs(ctx, pool, inputs)
	pool.requests.Add(int64(len(batch)))
	for _, j := range batch {
		switch {
		case err != nil:
			j.err, j.stderr = err, stderr
		default:
			j.out = make([]string, len(j.inputs))
			for i := range j.inputs {
				j.out[i] = reformatTxt(out[i])
			}
			out = out[len(j.inputs):]
		}
		close(j.done)
	}
}

// translateInputs writes inputs to one pipeline of the pool (the caller holds a slot) and reads
// their answers; a failed pipeline is killed and the inputs tried once more on a fresh one.
func (e *Engine) translateInputs(ctx context.Context, pool *modePool, inputs []string) (out []string, stderr string, err error) {
	var lastErr error
	for attempt := 0; attempt < 2; attempt++ {
		p, err := pool.take(attempt > 0)
		if err != nil {
			if lastErr != nil && ctx.Err() == nil {
				err = errors.Join(lastErr, err)
			}
			return nil, stderr, err
		}
		pool.writes.Add(1)
		out, err := p.translate(ctx, e.cfg.Now().Add(e.cfg.Timeout), inputs)
		if err == nil {
			pool.put(p, e.cfg.Now())
			return out, "", nil
		}
		p.kill()
		stderr = p.stderr.String()
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		lastErr = err
		e.cfg.Logger.Warn("apertium: warm pipeline failed, killed", "mode", pool.mode, "attempt", attempt+1, "err", err, "stderr", stderr)
	}
	return nil, stderr, lastErr
}

// WarmBatches reports, over every mode, how many requests the warm pipelines have answered and
// in how many writes to a pipeline (retries included): fewer writes than requests means that
// concurrent requests shared a flush.
func (e *Engine) WarmBatches() (requests, writes int64) {
	e.warmMu.Lock()
	defer e.warmMu.Unlock()
	for _, p := range e.pools {
		requests += p.requests.Load()
		writes += p.writes.Load()
	}
	return requests, writes
}

// reapLoop stops idle pipelines until Close.
func (e *Engine) reapLoop() {
	every := min(max(e.cfg.IdleTimeout/4, 10*time.Millisecond), 15*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			e.reapIdle()
		}
	}
}

// reapIdle stops the pipelines idle for longer than IdleTimeout.
func (e *Engine) reapIdle() {
	cutoff := e.cfg.Now().Add(-e.cfg.IdleTimeout)
	e.warmMu.Lock()
	pools := make([]*modePool, 0, len(e.pools))
	for _, p := range e.pools {
		pools = append(pools, p)
	}
	e.warmMu.Unlock()
	for _, p := range pools {
		p.reap(cutoff)
	}
}

// WarmProcesses lists the process ids of the programs of the warm pipelines that are idle at
// the moment, per mode (for measurements such as the pipelines' memory).
func (e *Engine) WarmProcesses() map[string][][]int {
	e.warmMu.Lock()
	defer e.warmMu.Unlock()
	out := map[string][][]int{}
	for mode, p := range e.pools {
		if pids := p.idlePids(); len(pids) > 0 {
			out[mode] = pids
		}
	}
	return out
}

// Close stops the warm pipelines (those in use once their request is done). The engine still
// serves one-shot afterwards if it is not configured warm; a warm engine answers with an error.
func (e *Engine) Close() error {
	e.warmMu.Lock()
	if e.closed {
		e.warmMu.Unlock()
		return nil
	}
	e.closed = true
	close(e.stop)
	pools := e.pools
	e.warmMu.Unlock()
	for _, p := range pools {
		p.close()
	}
	return nil
}
