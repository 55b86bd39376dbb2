package importer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"supportplatform.dev/pkg/apperr"
)

// ErrDropped is the outcome of a request for a folder that is gone, or is
// not to be imported (Target.Importable): the request is acknowledged and
// dropped.
var ErrDropped = errors.New("importer: the folder is gone or not imported")

// errLockLost cancels a round whose lock may have been lost.
var errLockLost = errors.New("importer: the folder's import lock was lost")

// DefaultLockCheck is how often a round checks that its lock is still held.
const DefaultLockCheck = 5 * time.Second

// RunnerOptions configure a Runner.
type RunnerOptions struct {
	Store    Store
	Locker   Locker
	Importer *Importer
	// LockCheck is how often a running round checks its lock (0:
	// DefaultLockCheck); a lost lock abandons the round.
	LockCheck time.Duration
	Metrics   *Metrics
	Now       func() time.Time
	Log       *slog.Logger
}

// Runner imports one folder at a time across every replica and never
// drops a request.
//
// The rule: a request first bumps the folder's request counter, then tries
// the folder's lock. When another import holds the lock, the request is
// done: the holder runs once more for it. The holder reads the counter,
// runs a round, and repeats until the counter did not change during its
// round; it releases the lock and reads the counter once more, and runs
// again (if it gets the lock back) when a request came in between its last
// read and the release (that request found the lock still held).
type Runner struct {
	o RunnerOptions
}

// NewRunner returns a Runner.
func NewRunner(o RunnerOptions) *Runner {
	if o.LockCheck <= 0 {
		o.LockCheck = DefaultLockCheck
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Runner{o: o}
}

// Import satisfies one import request of the customer's folder: it returns
// nil once a round that started after the call has stored the folder's
// delta link, here or in the lock holder, which will run it; ErrDropped
// for a folder that is gone or not imported; any other error when the
// round failed (the request is to be retried).
func (r *Runner) Import(ctx context.Context, customerID, channelID, folderID int64) error {
	t, err := r.o.Store.ImportTarget(ctx, customerID, channelID, folderID)
	if apperr.Is(err, apperr.NotFound) {
		return ErrDropped
	}
	if err != nil {
		return err
	}
	if !t.Importable {
		return ErrDropped
	}
	if err := r.o.Store.RequestImport(ctx, customerID, folderID, r.o.Now()); err != nil {
		if apperr.Is(err, apperr.NotFound) {
			return ErrDropped
		}
		return err
	}
	for {
		lease, ok, err := r.o.Locker.TryLockImport(ctx, customerID, folderID)
		if err != nil {
			return fmt.Errorf("import lock: %w", err)
		}
		if !ok {
			return nil
		}
		seen, err := r.hold(ctx, lease, channelID)
		if err != nil {
			return err
		}
		n, err := r.o.Store.ImportRequests(ctx, customerID, folderID)
		if apperr.Is(err, apperr.NotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if n == seen {
			return nil
		}
	}
}

// hold runs rounds under the lease until the request counter stays put
// during one, releases the lease and returns the counter's last value.
func (r *Runner) hold(ctx context.Context, lease Lease, channelID int64) (int64, error) {
	defer lease.Release()
	load := func() (Target, error) {
		t, err := lease.Load(ctx)
		if apperr.Is(err, apperr.NotFound) {
			return t, ErrDropped
		}
		if err == nil && (!t.Importable || t.ChannelID != channelID) {
			return t, ErrDropped
		}
		return t, err
	}
	t, err := load()
	if err != nil {
		return 0, err
	}
	for {
		if err := r.round(ctx, lease, t); err != nil {
			return 0, err
		}
		next, err := load()
		if err != nil {
			return 0, err
		}
		if next.Requests == t.Requests {
			return t.Requests, nil
		}
		t = next
	}
}

// round runs one round of t, stores its outcome under the lease, and
// abandons it when the lease's lock may be lost.
func (r *Runner) round(ctx context.Context, lease Lease, t Target) error {
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		tick := time.NewTicker(r.o.LockCheck)
		defer tick.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-tick.C:
				if err := lease.Alive(rctx); err != nil && rctx.Err() == nil {
					cancel(fmt.Errorf("%w: %v", errLockLost, err))
					return
				}
			}
		}
	}()
	start := time.Now()
	res, err := r.o.Importer.Round(rctx, t, lease.ClearDeltaLink)
	if err == nil {
		err = lease.Succeeded(rctx, res, r.o.Now())
	}
	cause := context.Cause(rctx)
	cancel(nil)
	<-watchDone
	log := r.o.Log.With("customerID", t.CustomerID, "channelID", t.ChannelID, "folderID", t.FolderID)
	switch {
	case err == nil:
		r.o.Metrics.round(RoundOK, time.Since(start))
		log.InfoContext(ctx, "folder imported", "published", res.Published, "skippedOwn", res.SkippedOwn, "unimportable", len(res.Unimportable),
			"resynced", res.Resynced, "duration", time.Since(start).String())
		return nil
	case ctx.Err() != nil || errors.Is(cause, errLockLost):
		// Shutdown or a lost lock: the request is redelivered; whatever
		// was published is dropped as a repeat next time.
		r.o.Metrics.round(RoundAbandoned, time.Since(start))
		if cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w (%w)", err, cause)
		}
		log.WarnContext(ctx, "folder import abandoned", "error", err.Error())
		return err
	}
	r.o.Metrics.round(RoundFailed, time.Since(start))
	log.WarnContext(ctx, "folder import failed", "error", err.Error())
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer fcancel()
	if ferr := lease.Failed(fctx, err.Error(), r.o.Now()); ferr != nil {
		log.WarnContext(ctx, "folder import failure not recorded", "error", ferr.Error())
	}
	return err
}
