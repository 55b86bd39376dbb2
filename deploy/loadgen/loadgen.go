// Package loadgen is a closed-loop HTTP load generator: a fixed number of
// workers each send one request at a time over kept-alive connections for a
// fixed duration after a warm-up, and the latencies of the measured requests
// give throughput and percentiles.
package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Config describes one measurement.
type Config struct {
	Concurrency int           // workers, each with one request in flight
	Duration    time.Duration // measured window
	Warmup      time.Duration // requests before the window are not counted
	Client      *http.Client
	// NewRequest builds each request (called concurrently).
	NewRequest func(ctx context.Context) (*http.Request, error)
	// Call, when set instead of Client and NewRequest, is the measured
	// operation itself (a baseline that is not an HTTP request, such as a
	// database INSERT); an error counts as a failed request.
	Call func(ctx context.Context) error
	// ExpectStatus is the status a successful response has (default 200);
	// any other status counts as an error.
	ExpectStatus int
	// Rate, when positive, paces the run: the n-th request (counted from
	// 0 over the warm-up and the window, all workers together) starts no
	// earlier than n/Rate seconds after the start. As long as the workers
	// keep up, requests start at Rate a second whatever the latency (open
	// loop); a late worker starts its request at once; and never more than
	// Concurrency requests are in flight, so a server falling behind meets
	// a closed loop instead of an ever-growing queue (and new connections).
	Rate float64
}

// Result is the outcome of a measurement window.
type Result struct {
	Requests int // completed in the window with the expected status
	Errors   int // failed or with another status, in the window
	// Completed counts every request sent, warm-up included: the divisor
	// for resources measured over the whole run.
	Completed int
	Elapsed   time.Duration
	RPS       float64 // successful requests per second
	P50, P90  time.Duration
	P99, Max  time.Duration
	// BodyBytes is the sum of the body sizes of the Requests (the
	// successful requests of the window): BodyBytes/Requests is the mean
	// answer's size.
	BodyBytes  int64
	FirstError string
}

func (r Result) String() string {
	return fmt.Sprintf("%9.0f req/s  p50 %8s  p90 %8s  p99 %8s  max %8s  (%d ok, %d errors)",
		r.RPS, round(r.P50), round(r.P90), round(r.P99), round(r.Max), r.Requests, r.Errors)
}

func round(d time.Duration) time.Duration {
	switch {
	case d > time.Second:
		return d.Round(time.Millisecond)
	case d > time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}

// Run performs the measurement. It returns an error only for a bad
// configuration or a cancelled context; failed requests are counted.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Concurrency < 1 || cfg.Duration <= 0 || (cfg.Call == nil && (cfg.Client == nil || cfg.NewRequest == nil)) {
		return Result{}, errors.New("loadgen: concurrency, duration, and a client and request or a call are required")
	}
	if cfg.ExpectStatus == 0 {
		cfg.ExpectStatus = http.StatusOK
	}
	if cfg.Call == nil {
		cfg.Client = keepAliveClient(cfg.Client, cfg.Concurrency)
	}
	start := time.Now()
	windowStart := start.Add(cfg.Warmup)
	windowEnd := windowStart.Add(cfg.Duration)

	type workerResult struct {
		latencies []time.Duration
		bytes     int64
		errors    int
		completed int
		firstErr  string
	}
	results := make([]workerResult, cfg.Concurrency)
	var turns atomic.Int64 // paced runs: the next request's number
	var interval time.Duration
	if cfg.Rate > 0 {
		interval = time.Duration(float64(time.Second) / cfg.Rate)
	}
	var wg sync.WaitGroup
	for w := range cfg.Concurrency {
		wg.Go(func() {
			res := &results[w]
			for {
				if cfg.Rate > 0 && !waitTurn(ctx, start.Add(time.Duration(turns.Add(1)-1)*interval), windowEnd) {
					return
				}
				t0 := time.Now()
				if !t0.Before(windowEnd) || ctx.Err() != nil {
					return
				}
				n, err := do(ctx, cfg, windowEnd)
				t1 := time.Now()
				res.completed++
				// Only requests wholly inside the window count.
				if t0.Before(windowStart) || t1.After(windowEnd) {
					continue
				}
				if err != nil {
					res.errors++
					if res.firstErr == "" {
						res.firstErr = err.Error()
					}
					continue
				}
				res.latencies = append(res.latencies, t1.Sub(t0))
				res.bytes += n
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}

	var all []time.Duration
	var r Result
	for _, wr := range results {
		all = append(all, wr.latencies...)
		r.Errors += wr.errors
		r.BodyBytes += wr.bytes
		r.Completed += wr.completed
		if r.FirstError == "" {
			r.FirstError = wr.firstErr
		}
	}
	slices.Sort(all)
	r.Requests = len(all)
	r.Elapsed = cfg.Duration
	r.RPS = float64(r.Requests) / cfg.Duration.Seconds()
	if len(all) > 0 {
		r.P50 = percentile(all, 50)
		r.P90 = percentile(all, 90)
		r.P99 = percentile(all, 99)
		r.Max = all[len(all)-1]
	}
	return r, nil
}

// waitTurn sleeps until due; false when due is not before end or ctx ends.
func waitTurn(ctx context.Context, due, end time.Time) bool {
	if !due.Before(end) {
		return false
	}
	d := time.Until(due)
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// keepAliveClient makes sure the client keeps an idle connection per
// worker: net/http keeps only 2 per host by default, and every further
// worker would then open (and handshake) a new connection per request,
// measuring TLS set-up rather than the server.
func keepAliveClient(c *http.Client, workers int) *http.Client {
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	tr, ok := base.(*http.Transport)
	if !ok || (tr.MaxIdleConnsPerHost >= workers && (tr.MaxIdleConns == 0 || tr.MaxIdleConns >= workers)) {
		return c
	}
	tr = tr.Clone()
	tr.MaxIdleConnsPerHost = workers
	if tr.MaxIdleConns != 0 && tr.MaxIdleConns < workers {
		tr.MaxIdleConns = workers
	}
	cc := *c
	cc.Transport = tr
	return &cc
}

// do sends one request and drains the body so the connection is reused;
// it returns the body's size.
func do(ctx context.Context, cfg Config, deadline time.Time) (int64, error) {
	// A request still running well past the window is abandoned, so a
	// stuck server cannot hold the run.
	ctx, cancel := context.WithDeadline(ctx, deadline.Add(10*time.Second))
	defer cancel()
	if cfg.Call != nil {
		return 0, cfg.Call(ctx)
	}
	req, err := cfg.NewRequest(ctx)
	if err != nil {
		return 0, err
	}
	resp, err := cfg.Client.Do(req)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return n, err
	}
	if resp.StatusCode != cfg.ExpectStatus {
		return n, fmt.Errorf("%s %s: status %d", req.Method, req.URL.Path, resp.StatusCode)
	}
	return n, nil
}

// percentile of sorted durations, nearest-rank.
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	if i < 1 {
		i = 1
	}
	return sorted[i-1]
}
