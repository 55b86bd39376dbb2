package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// OpenConfig describes an open-loop run: requests start at a fixed rate
// whatever the answers' latency, as users' requests do, so a slow server
// meets a growing queue instead of a politely waiting client. Latencies run
// from each request's scheduled start, which keeps a stall's cost in the
// percentiles (no coordinated omission).
type OpenConfig struct {
	Rate     float64       // requests started per second
	Duration time.Duration // how long requests are started
	// Call is one request; an error counts as failed (return a
	// *StatusError for an unexpected status, so that errors group by it).
	Call func(ctx context.Context) error
	// MaxInFlight bounds the requests running at once; a request due while
	// it is reached is not sent and counts as ErrOverload. Default: enough
	// for ten seconds of requests.
	MaxInFlight int
	// Timeout bounds each request (default 30 s).
	Timeout time.Duration
	// Progress, when set, is called every ProgressEvery (default 1 min)
	// with the figures so far.
	Progress      func(OpenProgress)
	ProgressEvery time.Duration
}

// OpenProgress is the state of a running open-loop run.
type OpenProgress struct {
	Elapsed  time.Duration
	Started  int
	OK       int
	Errors   int
	InFlight int
}

// OpenResult is the outcome of an open-loop run: Requests are the
// successful ones, Errors the failed ones (by kind in ErrorsByKind), RPS the
// successful ones per second of Duration.
type OpenResult struct {
	Result
	Started      int
	ErrorsByKind map[string]int
	// Lag is how late the generator itself started the requests it sent:
	// from each one's scheduled start to its Call (the timer's wake-up and
	// the scheduling of the generator's goroutines, which a busy machine
	// delays). A lag near the latency percentiles means the generator, not
	// the server, made them.
	LagP50, LagP99, LagMax time.Duration
}

type scheduledKey struct{}

// Scheduled is the scheduled start of the open-loop request whose Call got
// ctx (zero outside RunOpen): a Call that keeps its own figures (per route)
// measures from it, as RunOpen does.
func Scheduled(ctx context.Context) time.Time {
	t, _ := ctx.Value(scheduledKey{}).(time.Time)
	return t
}

// ErrOverload is a request that was due while MaxInFlight requests were
// still running: the server is far behind the rate.
var ErrOverload = errors.New("not sent: too many requests in flight")

// StatusError is an answer with a status other than the expected one.
type StatusError struct {
	Method, Path string
	Status       int
	// Body, when set, is the answer's body (a problem document); its
	// start ends the message.
	Body []byte
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s %s: status %d", e.Method, e.Path, e.Status)
	if b := bytes.TrimSpace(e.Body); len(b) > 0 {
		msg = fmt.Sprintf("%s: %.300s", msg, b)
	}
	return msg
}

// ErrorKind groups errors for a report: "status 503", "timeout",
// "overload" or "transport".
func ErrorKind(err error) string {
	var se *StatusError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("status %d", se.Status)
	case errors.Is(err, ErrOverload):
		return "overload"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	default:
		return "transport"
	}
}

// RunOpen starts cfg.Rate requests a second for cfg.Duration and waits for
// the last to end. It returns an error only for a bad configuration or a
// cancelled context.
func RunOpen(ctx context.Context, cfg OpenConfig) (OpenResult, error) {
	if cfg.Rate <= 0 || cfg.Duration <= 0 || cfg.Call == nil {
		return OpenResult{}, errors.New("loadgen: a positive rate and duration and a call are required")
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = max(int(cfg.Rate*10), 100)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = time.Minute
	}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		lags      []time.Duration
		res       = OpenResult{ErrorsByKind: map[string]int{}}
		inFlight  int
		wg        sync.WaitGroup
	)
	fail := func(err error) {
		res.Errors++
		res.ErrorsByKind[ErrorKind(err)]++
		if res.FirstError == "" {
			res.FirstError = err.Error()
		}
	}
	progress := func(elapsed time.Duration) {
		if cfg.Progress == nil {
			return
		}
		mu.Lock()
		p := OpenProgress{Elapsed: elapsed, Started: res.Started, OK: len(latencies), Errors: res.Errors, InFlight: inFlight}
		mu.Unlock()
		cfg.Progress(p)
	}

	interval := time.Duration(float64(time.Second) / cfg.Rate)
	start := time.Now()
	end := start.Add(cfg.Duration)
	nextProgress := start.Add(cfg.ProgressEvery)
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if !due.Before(end) {
			break
		}
		if wait := time.Until(due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				wg.Wait()
				return OpenResult{}, ctx.Err()
			case <-timer.C:
			}
		}
		if now := time.Now(); !now.Before(nextProgress) {
			progress(now.Sub(start))
			nextProgress = nextProgress.Add(cfg.ProgressEvery)
		}
		mu.Lock()
		res.Started++
		if inFlight >= cfg.MaxInFlight {
			fail(ErrOverload)
			mu.Unlock()
			continue
		}
		inFlight++
		mu.Unlock()
		wg.Go(func() {
			lag := time.Since(due)
			rctx, cancel := context.WithTimeout(context.WithValue(ctx, scheduledKey{}, due), cfg.Timeout)
			err := cfg.Call(rctx)
			cancel()
			d := time.Since(due)
			mu.Lock()
			defer mu.Unlock()
			inFlight--
			lags = append(lags, lag)
			if err != nil {
				fail(err)
				return
			}
			latencies = append(latencies, d)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return OpenResult{}, err
	}
	slices.Sort(latencies)
	res.Requests = len(latencies)
	res.Completed = res.Requests + res.Errors
	res.Elapsed = cfg.Duration
	res.RPS = float64(res.Requests) / cfg.Duration.Seconds()
	if n := len(latencies); n > 0 {
		res.P50, res.P90, res.P99 = percentile(latencies, 50), percentile(latencies, 90), percentile(latencies, 99)
		res.Max = latencies[n-1]
	}
	if n := len(lags); n > 0 {
		slices.Sort(lags)
		res.LagP50, res.LagP99, res.LagMax = percentile(lags, 50), percentile(lags, 99), lags[n-1]
	}
	return res, nil
}
