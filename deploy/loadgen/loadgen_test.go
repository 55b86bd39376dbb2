package loadgen

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunMeasuresLatencyAndThroughput(t *testing.T) {
	const delay = 5 * time.Millisecond
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		_, _ = w.Write([]byte("ok"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	const workers = 4
	res, err := Run(t.Context(), Config{
		Concurrency: workers,
		Duration:    400 * time.Millisecond,
		Warmup:      100 * time.Millisecond,
		Client:      srv.Client(),
		NewRequest: func(ctx context.Context) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.Requests == 0 || res.Completed <= res.Requests {
		t.Fatalf("result %+v", res)
	}
	// Every measured answer is "ok".
	if res.BodyBytes != int64(2*res.Requests) {
		t.Errorf("%d body bytes for %d answers of 2 bytes", res.BodyBytes, res.Requests)
	}
	if res.P50 < delay || res.P99 < res.P50 || res.Max < res.P99 {
		t.Errorf("percentiles inconsistent with a %s handler: %+v", delay, res)
	}
	// Closed loop: each worker completes at most one request per delay.
	if limit := float64(workers) / delay.Seconds(); res.RPS > limit*1.05 {
		t.Errorf("%.0f req/s exceeds the closed-loop bound %.0f", res.RPS, limit)
	}
	// Keep-alive: one connection per worker, not one per request.
	if n := conns.Load(); n > workers {
		t.Errorf("%d connections for %d workers: connections are not reused", n, workers)
	}
	if res.RPS < float64(workers)/delay.Seconds()/4 {
		t.Errorf("%.0f req/s: far below what %d workers reach against %s", res.RPS, workers, delay)
	}
}

func TestRunCountsUnexpectedStatusAsError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "nope", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	res, err := Run(t.Context(), Config{
		Concurrency: 2,
		Duration:    100 * time.Millisecond,
		Client:      srv.Client(),
		NewRequest: func(ctx context.Context) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/x", nil)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 0 || res.Errors == 0 || !strings.Contains(res.FirstError, "503") {
		t.Errorf("result %+v, want only errors with status 503", res)
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for p, want := range map[int]time.Duration{50: 50, 99: 99, 100: 100, 1: 1} {
		if got := percentile(d, p); got != want {
			t.Errorf("p%d = %d, want %d", p, got, want)
		}
	}
	if got := percentile([]time.Duration{7}, 99); got != 7 {
		t.Errorf("single sample p99 = %d", got)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	if _, err := Run(t.Context(), Config{}); err == nil {
		t.Error("empty config accepted")
	}
}

func TestRunMeasuresACall(t *testing.T) {
	var calls atomic.Int64
	res, err := Run(t.Context(), Config{
		Concurrency: 2,
		Duration:    200 * time.Millisecond,
		Call: func(ctx context.Context) error {
			time.Sleep(2 * time.Millisecond)
			if calls.Add(1)%10 == 0 {
				return errors.New("every tenth call fails")
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Errors == 0 || res.FirstError != "every tenth call fails" {
		t.Fatalf("%+v", res)
	}
	if res.Requests < 5*res.Errors || res.Requests > 12*res.Errors {
		t.Fatalf("%d ok and %d errors: about one in ten should fail", res.Requests, res.Errors)
	}
}

// A paced run starts Rate requests a second in all, however many workers
// wait; a server slower than the rate meets at most Concurrency requests
// at once.
func TestRunPaced(t *testing.T) {
	var inFlight, peak atomic.Int64
	var delay atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(time.Duration(delay.Load()))
		inFlight.Add(-1)
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	run := func(workers int, rate float64) Result {
		res, err := Run(t.Context(), Config{
			Concurrency: workers,
			Duration:    600 * time.Millisecond,
			Warmup:      100 * time.Millisecond,
			Rate:        rate,
			Client:      srv.Client(),
			NewRequest: func(ctx context.Context) (*http.Request, error) {
				return http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// 8 workers of 10 ms could do 800 req/s; paced, 100 (70 started in
	// 700 ms).
	delay.Store(int64(10 * time.Millisecond))
	if res := run(8, 100); res.Errors != 0 || res.Completed > 71 || res.RPS > 105 || res.RPS < 70 {
		t.Errorf("paced at 100 req/s: %+v", res)
	}
	// 100 ms answers at 1,000 req/s: the 4 workers' closed loop, 40 req/s.
	delay.Store(int64(100 * time.Millisecond))
	peak.Store(0)
	if res := run(4, 1000); res.Errors != 0 || res.RPS > 42 {
		t.Errorf("paced above what the server does: %+v", res)
	}
	if p := peak.Load(); p > 4 {
		t.Errorf("%d requests in flight at once, 4 workers", p)
	}
}
