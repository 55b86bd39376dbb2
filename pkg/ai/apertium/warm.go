package apertium

import (
	"context"
	"errors"
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

// translateWarm sends the texts through one warm pipeline of the pool, in one go. A pipeline
// that fails is killed and the request retried once on a fresh one.
func (e *Engine) translateWarm(ctx context.Context, pool *modePool, texts []string) ([]string, error) {
	inputs := make([]string, len(texts))
	for i, t := range texts {
		inputs[i] = deformatTxt(t)
	}
	var lastErr error
	var stderr string
	for attempt := 0; attempt < 2; attempt++ {
		p, err := pool.acquire(ctx, attempt > 0)
		if err != nil {
			if lastErr != nil && ctx.Err() == nil {
				err = errors.Join(lastErr, err)
			}
			return nil, &RunError{Mode: pool.mode, Stderr: stderr, Err: err}
		}
		out, err := p.translate(ctx, e.cfg.Now().Add(e.cfg.Timeout), inputs)
		if err == nil {
			pool.release(p, e.cfg.Now())
			for i := range out {
				out[i] = reformatTxt(out[i])
			}
			return out, nil
		}
		pool.discard(p)
		stderr = p.stderr.String()
		if ctx.Err() != nil {
			return nil, &RunError{Mode: pool.mode, Err: ctx.Err()}
		}
		lastErr = err
		e.cfg.Logger.Warn("apertium: warm pipeline failed, killed", "mode", pool.mode, "attempt", attempt+1, "err", err, "stderr", stderr)
	}
	return nil, &RunError{Mode: pool.mode, Stderr: stderr, Err: lastErr}
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
