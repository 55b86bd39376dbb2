// Package httpretry decides whether and when an HTTP call to an upstream API is repeated: which
// statuses are transient, how a Retry-After header is read, and how long to back off otherwise.
// The HTTP clients to outside APIs (the mail service's Microsoft Graph client and the AI module's
// OpenAI-compatible and LibreTranslate clients) share it so that they behave alike under load
// shedding; it lives in pkg because more than one module uses it.
package httpretry

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Policy is a retry schedule. The zero value makes one attempt and never retries.
type Policy struct {
	// MaxRetries is the number of attempts after the first one.
	MaxRetries int
	// BaseDelay is the backoff before the first retry when the server gave no Retry-After; each
	// further retry doubles it, up to MaxDelay.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxWait caps a server-requested Retry-After. A server that asks for more is not retried:
	// waiting minutes inside a user's request helps nobody, and retrying sooner than asked only
	// earns another 429.
	MaxWait time.Duration
	// MinAttempt is the least time a retry needs to be worth starting: no retry (and no wait for
	// one) begins unless, after the wait, at least MinAttempt remains before ctx's deadline. A
	// request's budget (REQUEST_TIMEOUT) thus ends the retries instead of cutting one short.
	MinAttempt time.Duration
	// Sleep waits for d or until ctx ends. Tests inject a recorder; nil uses a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock for deadlines and HTTP-date Retry-After values; nil uses time.Now.
	Now func() time.Time
}

// Retry marks an attempt's failure as transient. When the server asked for a delay, Requested is
// true and After holds it (possibly zero); otherwise the backoff schedule applies.
type Retry struct {
	Err       error
	After     time.Duration
	Requested bool
}

func (r *Retry) Error() string { return r.Err.Error() }
func (r *Retry) Unwrap() error { return r.Err }

// Run calls attempt until it succeeds, fails without a *Retry, or the retries are used up, and
// returns the number of attempts made with the last error (unwrapped from its *Retry). It stops
// early rather than wait for a retry that could not get MinAttempt before ctx's deadline.
func (p Policy) Run(ctx context.Context, attempt func(ctx context.Context) error) (int, error) {
	for n := 1; ; n++ {
		err := attempt(ctx)
		if err == nil {
			return n, nil
		}
		var r *Retry
		if !errors.As(err, &r) {
			return n, err
		}
		if n > p.MaxRetries || ctx.Err() != nil {
			return n, r.Err
		}
		wait := p.Backoff(n - 1)
		if r.Requested {
			if p.MaxWait > 0 && r.After > p.MaxWait {
				return n, r.Err
			}
			wait = r.After
		}
		if dl, ok := ctx.Deadline(); ok && p.now().Add(wait+p.MinAttempt).After(dl) {
			return n, r.Err
		}
		if serr := p.sleep(ctx, wait); serr != nil {
			return n, r.Err
		}
	}
}

// Backoff returns the delay before retry number retry (0-based): exponential from BaseDelay, capped
// at MaxDelay, with "equal jitter" (half fixed, half random) so that clients rejected together do
// not come back together.
func (p Policy) Backoff(retry int) time.Duration {
	base, limit := p.BaseDelay, p.MaxDelay
	if base <= 0 {
		base = 500 * time.Millisecond
	}
	if limit <= 0 {
		limit = 10 * time.Second
	}
	d := float64(base) * math.Pow(2, float64(retry))
	if d > float64(limit) {
		d = float64(limit)
	}
	half := time.Duration(d / 2)
	return half + rand.N(half+1)
}

func (p Policy) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p Policy) sleep(ctx context.Context, d time.Duration) error {
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	return Sleep(ctx, d)
}

// Sleep waits for d or until ctx ends, whichever comes first.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Transient reports whether a response status is worth retrying: rate limiting and server-side
// failures, except 501 and 505 which will not change on a second try.
func Transient(status int) bool {
	if status == http.StatusTooManyRequests {
		return true
	}
	return status >= 500 && status <= 599 &&
		status != http.StatusNotImplemented && status != http.StatusHTTPVersionNotSupported
}

// RetryAfter reads the server's requested delay. It understands Retry-After as whole or fractional
// seconds ("2", "2.128") or as an HTTP-date, and the retry-after-ms header some OpenAI-compatible
// servers send. ok is false when there is no usable value.
func RetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && !math.IsInf(ms, 0) && !math.IsNaN(ms) {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 || math.IsInf(secs, 0) || math.IsNaN(secs) || secs > 1e6 {
			return 0, false
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	if at, err := http.ParseTime(v); err == nil {
		d := at.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}
