package loadgen

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// call sends a GET and returns a *StatusError for any status but 200.
func call(c *http.Client, url string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return &StatusError{Method: req.Method, Path: req.URL.Path, Status: resp.StatusCode}
		}
		return nil
	}
}

func TestRunOpenKeepsTheRate(t *testing.T) {
	const delay = 20 * time.Millisecond
	var n, running, peak atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cur := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if cur <= p || peak.CompareAndSwap(p, cur) {
				break
			}
		}
		time.Sleep(delay)
		if n.Add(1)%10 == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	var progress atomic.Int32
	res, err := RunOpen(t.Context(), OpenConfig{Rate: 200, Duration: 500 * time.Millisecond, Call: call(srv.Client(), srv.URL),
		ProgressEvery: 100 * time.Millisecond, Progress: func(OpenProgress) { progress.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Started != 100 {
		t.Fatalf("started %d requests in 500 ms at 200/s, want 100", res.Started)
	}
	if res.Requests+res.Errors != res.Started || res.Errors != res.ErrorsByKind["status 503"] || res.Errors != 10 {
		t.Fatalf("result %+v", res)
	}
	// A closed loop of one would have run 25 requests one after another;
	// this one overlapped them to keep the rate.
	if peak.Load() < 2 {
		t.Fatalf("at most %d requests ran at once", peak.Load())
	}
	if res.P50 < delay || res.Max < res.P99 {
		t.Fatalf("percentiles %+v for a %s handler", res.Result, delay)
	}
	if progress.Load() < 3 {
		t.Fatalf("progress reported %d times in 500 ms every 100 ms", progress.Load())
	}
}

// Each Call knows its scheduled start, and the generator's lag is measured
// from it: at most the latency, which includes it.
func TestRunOpenScheduledAndLag(t *testing.T) {
	var mu sync.Mutex
	var starts []time.Time
	res, err := RunOpen(t.Context(), OpenConfig{Rate: 100, Duration: 100 * time.Millisecond, Call: func(ctx context.Context) error {
		s := Scheduled(ctx)
		if s.IsZero() || time.Since(s) < 0 {
			return errors.New("no scheduled start")
		}
		mu.Lock()
		starts = append(starts, s)
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 10 || res.Errors != 0 || len(starts) != 10 {
		t.Fatalf("result %+v, %d starts", res, len(starts))
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	if gap := starts[9].Sub(starts[0]); gap != 90*time.Millisecond {
		t.Fatalf("scheduled starts 10 ms apart span %s, want 90ms", gap)
	}
	if res.LagMax <= 0 || res.LagP50 > res.LagP99 || res.LagMax > res.Max || res.P50 < 5*time.Millisecond {
		t.Fatalf("lag p50 %s p99 %s max %s, latency %+v", res.LagP50, res.LagP99, res.LagMax, res.Result)
	}
	if Scheduled(t.Context()) != (time.Time{}) {
		t.Fatal("a context outside RunOpen has a scheduled start")
	}
}

func TestRunOpenCountsOverloadAndTimeouts(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	res, err := RunOpen(t.Context(), OpenConfig{Rate: 100, Duration: 200 * time.Millisecond, MaxInFlight: 5,
		Timeout: 300 * time.Millisecond, Call: call(srv.Client(), srv.URL)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Started != 20 || res.ErrorsByKind["overload"] != 15 || res.ErrorsByKind["timeout"] != 5 || res.Requests != 0 {
		t.Fatalf("result %+v", res)
	}
}

func TestErrorKind(t *testing.T) {
	for err, want := range map[error]string{
		&StatusError{Method: "GET", Path: "/x", Status: 502}: "status 502",
		ErrOverload:                    "overload",
		context.DeadlineExceeded:       "timeout",
		errors.New("connection reset"): "transport",
	} {
		if got := ErrorKind(err); got != want {
			t.Errorf("ErrorKind(%v) = %q, want %q", err, got, want)
		}
	}
}
