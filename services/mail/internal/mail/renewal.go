package mail

import (
	"context"
	"errors"
	"time"
)

// RoundResult counts what one renewal round did.
type RoundResult struct {
	// Expiring is how many subscriptions expired within the window when
	// the round began.
	Expiring                        int
	Renewed, Recreated, RenewFailed int
	Created, CreateFailed           int
	Deleted, DeleteFailed           int
}

// RenewerOptions configure a Renewer.
type RenewerOptions struct {
	// Window: subscriptions expiring sooner than this are renewed
	// (default 1h, spec section 8).
	Window time.Duration
	// FolderTimeout bounds the provider calls of one folder (default 1m);
	// the folder's row stays locked meanwhile.
	FolderTimeout time.Duration
	// Batch bounds the missing subscriptions created per round (default
	// 500); the rest wait for the next round.
	Batch int
}

// RenewalStore is what a renewal round finds its work by, over every
// customer.
type RenewalStore interface {
	// ClaimDue locks one folder whose subscription expires before
	// now+window or whose renewal mark is due, skipping locked rows, and
	// runs fn on it; false when none is due.
	ClaimDue(ctx context.Context, now time.Time, window time.Duration, skip ClaimSkip, fn LockedFunc) (bool, error)
	// Missing lists folders that should have a subscription and have none,
	// whose renewal mark (if any) is due.
	Missing(ctx context.Context, now time.Time, skip ClaimSkip, limit int) ([]Target, error)
	// RetireUnwanted retires the subscriptions of folders that should not
	// have one.
	RetireUnwanted(ctx context.Context) (int, error)
	// CountExpiring counts the subscriptions that expire before now+window.
	CountExpiring(ctx context.Context, now time.Time, window time.Duration) (int, error)
}

// Renewer is the background renewal job. Each round it (a) renews the
// subscriptions that expire within the window or are marked for renewal,
// re-creating those the provider has deleted, (b) creates the ones that
// should exist and do not, and (c) retires the ones that should not exist
// and deletes the retired ones at the provider. Several renewers may run on
// one database: every folder and retired row is claimed under a row lock
// (SKIP LOCKED), so each is handled once.
type Renewer struct {
	store RenewalStore
	svc   *SubscriptionService
	o     RenewerOptions
}

// NewRenewer returns a renewer that finds its work in store and does it
// through svc.
func NewRenewer(store RenewalStore, svc *SubscriptionService, o RenewerOptions) *Renewer {
	if o.Window <= 0 {
		o.Window = time.Hour
	}
	if o.FolderTimeout <= 0 {
		o.FolderTimeout = time.Minute
	}
	if o.Batch <= 0 {
		o.Batch = 500
	}
	return &Renewer{store: store, svc: svc, o: o}
}

// Run runs a round at once and then every interval until ctx ends. A round
// stops between folders when ctx ends: the folder in hand is finished (its
// provider call and its row are never left half done).
func (r *Renewer) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		_, err := r.Round(ctx)
		if err != nil {
			r.svc.log.WarnContext(ctx, "renewal round", "error", err.Error())
		}
		r.svc.metrics.round(err == nil)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Round runs one renewal round. It returns early, without error, when ctx
// ends; the error is the store's.
func (r *Renewer) Round(ctx context.Context) (RoundResult, error) {
	s := r.svc
	var res RoundResult
	stop := func() bool { return ctx.Err() != nil }
	work := context.WithoutCancel(ctx)
	n, err := r.store.CountExpiring(work, s.now(), r.o.Window)
	if err != nil {
		return res, err
	}
	res.Expiring = n
	s.metrics.setExpiring(n)

	// (a) Renewals, one claimed folder at a time; a folder tried once is
	// not claimed again this round, whatever the outcome.
	var skip ClaimSkip
	for !stop() {
		now := s.now()
		skip.Tenants = s.throttle.tenants(now)
		fctx, cancel := context.WithTimeout(work, r.o.FolderTimeout)
		claimed, err := r.store.ClaimDue(fctx, now, r.o.Window, skip, func(ctx context.Context, lf LockedFolder) (FolderUpdate, error) {
			skip.Folders = append(skip.Folders, lf.Folder.ID)
			upd, result := s.renew(ctx, lf, now)
			switch result {
			case RenewalOK:
				res.Renewed++
			case RenewalRecreated:
				res.Recreated++
			case RenewalFailed:
				res.RenewFailed++
			}
			return upd, nil
		})
		cancel()
		if err != nil {
			return res, err
		}
		if !claimed {
			break
		}
	}

	// (b) Subscriptions that should exist and do not (switched on while
	// the provider failed, or its earlier create failed).
	if !stop() {
		now := s.now()
		missing, err := r.store.Missing(work, now, ClaimSkip{Tenants: s.throttle.tenants(now)}, r.o.Batch)
		if err != nil {
			return res, err
		}
		for _, t := range missing {
			if stop() {
				break
			}
			fctx, cancel := context.WithTimeout(work, r.o.FolderTimeout)
			o, err := s.ensure(fctx, t.Folder.CustomerID, t.Folder.ID, true)
			cancel()
			if err != nil {
				return res, err
			}
			switch o.Outcome {
			case OutcomeSubscribed:
				res.Created++
			case OutcomeFailed:
				res.CreateFailed++
			}
		}
	}

	// (c) Subscriptions that should not exist any more, then every
	// retired one that is due.
	if !stop() {
		if _, err := r.store.RetireUnwanted(work); err != nil {
			return res, err
		}
		deleted, err := s.deleteRetired(work, 0, stop)
		for _, e := range deleted {
			if e == nil {
				res.Deleted++
			} else {
				res.DeleteFailed++
			}
		}
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// renew renews a claimed folder's subscription (or retires it when the
// folder should not have one any more). A subscription the provider no
// longer knows (it deletes unrenewed ones) is re-created at once with the
// folder's stored client state: that secret is committed already, so a
// notification of the new subscription that beats its stored id is still
// recognised, which a fresh secret written under this lock would not be.
func (s *SubscriptionService) renew(ctx context.Context, lf LockedFolder, now time.Time) (FolderUpdate, string) {
	f := lf.Folder
	tenant, err := lf.Channel.GraphTenant()
	if err != nil || !shouldSubscribe(lf.Target) {
		return FolderUpdate{Retire: true}, ""
	}
	if until, blocked := s.throttle.blocked(tenant, now); blocked {
		s.metrics.renewal(RenewalFailed)
		return FolderUpdate{RetryAt: &until}, RenewalFailed
	}
	sub, err := s.provider.Renew(ctx, tenant, f.SubscriptionID, now.Add(s.lifetime))
	if err == nil {
		if sub.ID == "" {
			sub.ID = f.SubscriptionID
		}
		s.metrics.renewal(RenewalOK)
		return FolderUpdate{Save: &sub}, RenewalOK
	}
	if !errors.Is(err, ErrProviderNotFound) {
		at := s.failure(tenant, err, now, s.retry)
		s.metrics.renewal(RenewalFailed)
		s.log.WarnContext(ctx, "provider subscription not renewed", "folderID", f.ID, "error", errorText(err))
		return FolderUpdate{RetryAt: &at}, RenewalFailed
	}
	if lf.ClientState == "" {
		// Not expected (a subscription is stored with its secret): let
		// the create pass make a new one with a fresh secret.
		s.metrics.renewal(RenewalFailed)
		return FolderUpdate{Clear: true}, RenewalFailed
	}
	sub, user, err := s.create(ctx, lf, false, now)
	if err != nil {
		s.metrics.create(false)
		s.metrics.renewal(RenewalFailed)
		delay, from := s.retry, now
		if errors.Is(err, ErrProviderMaybeCreated) {
			delay, from = min(delay, s.createIn), s.now()
		}
		at := s.failure(tenant, err, from, delay)
		s.log.WarnContext(ctx, "expired provider subscription not re-created", "folderID", f.ID, "error", errorText(err))
		// The old id is gone: forget it, so the create pass retries at at.
		return FolderUpdate{SaveUser: user, Clear: true, RetryAt: &at}, RenewalFailed
	}
	s.metrics.create(true)
	s.metrics.renewal(RenewalRecreated)
	return FolderUpdate{SaveUser: user, Save: &sub, CatchUpAt: &now}, RenewalRecreated
}
