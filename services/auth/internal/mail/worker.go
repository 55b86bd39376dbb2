package mail

import (
	"context"
	"errors"
	"log/slog"
	"net/mail"
	"time"
)

// Queue is the mail queue the sender loop works (the postgres store).
type Queue interface {
	// ClaimMails marks up to n pending mails due at now as being sent
	// (one attempt more each) and returns them; rows another sender holds
	// are skipped (FOR UPDATE SKIP LOCKED), so each row goes to one sender.
	ClaimMails(ctx context.Context, now time.Time, n int) ([]Queued, error)
	// SettleMail ends a claimed mail in state (StateSent, StateFailed,
	// StateExpired, StateUnknown) and clears its link.
	SettleMail(ctx context.Context, id int64, state string, now time.Time, reason string) error
	// RetryMail puts a claimed mail back as pending until at.
	RetryMail(ctx context.Context, id int64, at time.Time, reason string) error
	// AbandonMails settles as StateUnknown the mails claimed before
	// before and never settled (their sender died mid-delivery).
	AbandonMails(ctx context.Context, before, now time.Time) (int, error)
	// PurgeMails deletes mails settled before before.
	PurgeMails(ctx context.Context, before time.Time) (int, error)
}

// States of a queued mail.
const (
	StatePending = "pending"
	StateSending = "sending"
	StateSent    = "sent"
	StateFailed  = "failed"  // refused for good, or out of attempts
	StateExpired = "expired" // its link expired (or was voided) before it could go
	StateUnknown = "unknown" // may or may not have reached the relay; never sent again
)

// Sender delivers one message (SMTP).
type Sender interface {
	Send(ctx context.Context, from, to string, msg []byte) error
}

// WorkerOptions configure the sender loop; zero values take the defaults.
type WorkerOptions struct {
	Poll        time.Duration // how often the queue is looked at without a wake-up (default 5s)
	MaxAttempts int           // attempts before a mail fails (default 8)
	BackoffMin  time.Duration // wait after the first refused attempt, doubling each time (default 30s)
	BackoffMax  time.Duration // longest wait between attempts (default 15m)
	// Abandon is how long after its claim an unsettled mail is given up as
	// StateUnknown; longer than a whole batch's deliveries can take
	// (default 10m).
	Abandon time.Duration
	Keep    time.Duration // how long settled rows are kept (default 30 days)
	Batch   int           // mails claimed per pass (default 10)
}

// Worker is the sender loop.
type Worker struct {
	queue  Queue
	sender Sender
	from   *mail.Address
	opts   WorkerOptions
	log    *slog.Logger
	now    func() time.Time
	wake   chan struct{}
}

// NewWorker builds the loop. from is the From address ("Support
// <no-reply@example.com>").
func NewWorker(q Queue, s Sender, from string, opts WorkerOptions, log *slog.Logger, now func() time.Time) (*Worker, error) {
	addr, err := mail.ParseAddress(from)
	if err != nil {
		return nil, errors.New("mail: the From address " + from + " is not an address")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.Poll, 5*time.Second)
	def(&opts.BackoffMin, 30*time.Second)
	def(&opts.BackoffMax, 15*time.Minute)
	def(&opts.Abandon, 10*time.Minute)
	def(&opts.Keep, 30*24*time.Hour)
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 8
	}
	if opts.Batch <= 0 {
		opts.Batch = 10
	}
	return &Worker{queue: q, sender: s, from: addr, opts: opts, log: log, now: now, wake: make(chan struct{}, 1)}, nil
}

// Wake makes the loop look at the queue now (a mail was queued). It never
// blocks.
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run works the queue until ctx ends.
func (w *Worker) Run(ctx context.Context) {
	t := time.NewTicker(w.opts.Poll)
	defer t.Stop()
	for {
		for {
			n, err := w.RunOnce(ctx)
			if err != nil && ctx.Err() == nil {
				w.log.WarnContext(ctx, "mail queue", "error", err.Error())
			}
			if err != nil || n < w.opts.Batch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.wake:
		}
	}
}

// RunOnce settles abandoned mails, claims one batch of due mails and
// delivers them; it returns how many it claimed.
//
// Delivery is at most once: a claimed row is committed as "sending" before
// the relay is contacted, and only a definite answer puts it back. A refusal
// that left nothing at the relay (a 4xx reply, a connection or TLS failure
// before the data was complete) is retried with backoff; a 5xx to the
// recipient or the data fails it; no answer after the data, or a sender
// that died mid-delivery, settles it as "unknown" and it is never sent
// again, because a second copy of a reset link is worse than asking the
// user to request another.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	now := w.now()
	if n, err := w.queue.AbandonMails(ctx, now.Add(-w.opts.Abandon), now); err != nil {
		return 0, err
	} else if n > 0 {
		w.log.WarnContext(ctx, "mail: deliveries of a stopped sender given up (never sent twice)", "mails", n)
	}
	if _, err := w.queue.PurgeMails(ctx, now.Add(-w.opts.Keep)); err != nil {
		return 0, err
	}
	batch, err := w.queue.ClaimMails(ctx, now, w.opts.Batch)
	if err != nil {
		return 0, err
	}
	for i, q := range batch {
		if ctx.Err() != nil {
			// Stopping: the claimed mails not yet tried go back to the
			// queue now rather than being given up as unknown later.
			keep := context.WithoutCancel(ctx)
			for _, rest := range batch[i:] {
				if err := w.queue.RetryMail(keep, rest.ID, now, "not tried: the sender stopped"); err != nil {
					return len(batch), err
				}
			}
			return len(batch), ctx.Err()
		}
		if err := w.deliver(ctx, q); err != nil {
			return len(batch), err
		}
	}
	return len(batch), nil
}

func (w *Worker) deliver(ctx context.Context, q Queued) error {
	now := w.now()
	log := w.log.With("mail", q.ID, "kind", q.Kind, "attempt", q.Attempts)
	if q.Kind == KindPasswordReset && !now.Before(q.ExpiresAt) {
		log.InfoContext(ctx, "mail: the reset link expired before it could be sent")
		return w.queue.SettleMail(ctx, q.ID, StateExpired, now, "the link expired before delivery")
	}
	msg, err := compose(q, w.from, now)
	if err != nil {
		log.ErrorContext(ctx, "mail: cannot compose", "error", err.Error())
		return w.queue.SettleMail(ctx, q.ID, StateFailed, now, err.Error())
	}
	err = w.sender.Send(ctx, w.from.Address, q.To, msg)
	now = w.now()
	// The outcome is recorded even when ctx ended meanwhile (shutdown).
	ctx = context.WithoutCancel(ctx)
	var se *SendError
	switch {
	case err == nil:
		log.InfoContext(ctx, "mail sent")
		return w.queue.SettleMail(ctx, q.ID, StateSent, now, "")
	case errors.As(err, &se) && se.Unknown:
		log.WarnContext(ctx, "mail: the relay did not answer after the data; not sent again", "error", err.Error())
		return w.queue.SettleMail(ctx, q.ID, StateUnknown, now, err.Error())
	case errors.As(err, &se) && se.Permanent:
		log.WarnContext(ctx, "mail refused for good", "error", err.Error())
		return w.queue.SettleMail(ctx, q.ID, StateFailed, now, err.Error())
	case q.Attempts >= w.opts.MaxAttempts:
		log.WarnContext(ctx, "mail: out of attempts", "error", err.Error())
		return w.queue.SettleMail(ctx, q.ID, StateFailed, now, err.Error())
	default:
		at := now.Add(w.backoff(q.Attempts))
		log.InfoContext(ctx, "mail not sent; retried later", "error", err.Error(), "retryAt", at)
		return w.queue.RetryMail(ctx, q.ID, at, err.Error())
	}
}

// backoff is the wait after the attempt-th refused attempt.
func (w *Worker) backoff(attempt int) time.Duration {
	d := w.opts.BackoffMin
	for i := 1; i < attempt && d < w.opts.BackoffMax; i++ {
		d *= 2
	}
	return min(d, w.opts.BackoffMax)
}
