package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"supportplatform.dev/deploy/loadgen"
)

// The gateway's CPU per request depends on the request rate (at a lower
// rate each request pays its own wake-ups and syscalls) and on the
// answer's size (the body proxied, TLS records, HTTP/2 frames), not only on
// what a route's middlewares do. So each API case's Traefik CPU is also
// compared with the static route's at the same rate and answer size: after
// the case, the static route is driven at the case's measured req/s, open
// loop (paced: loadgen.Config.Rate) with the case's workers as the bound on
// requests in flight, with answers of the case's mean size, and both µs per
// request and their ratio are printed (gatewayTarget is issue 26's bound).
//
// The paced static answers are fast, so that run has one or two requests
// in flight where the case had its workers' worth, and shares fewer
// wake-ups and syscalls between them. A third run makes the in-flight
// count about equal too: the static route again at the case's rate and
// size, each answer held back for 75% of the case's mean latency
// (workers/rate, Little's law), so that about as many requests (and
// backend connections) are open at once as in the case.

// staticPath is the baseline's route; with ?bytes=N its answer is N bytes.
const staticPath = "/bench/static"

// gatewayTarget: an API route's Traefik CPU per request is within this
// factor of the static route's (issue 26).
const gatewayTarget = 1.3

// staticPad is the smallest object staticAnswer makes.
const staticPad = `{"pad":""}`

// staticAnswer is a JSON answer of exactly n bytes: staticBody when n is
// its size, an object with a padded string, or below staticPad's size a
// string (an API answer such as detect-language's "fr"); 1 byte is 0, 0 or
// less an empty body.
func staticAnswer(n int) []byte {
	switch {
	case n == len(staticBody):
		return staticBody
	case n <= 0:
		return []byte{}
	case n == 1:
		return []byte("0")
	case n < len(staticPad):
		return []byte(`"` + strings.Repeat("x", n-2) + `"`)
	}
	b := make([]byte, 0, n)
	b = append(b, `{"pad":"`...)
	for len(b) < n-2 {
		b = append(b, 'x')
	}
	return append(b, `"}`...)
}

// staticHandler answers staticBody, or with ?bytes=N a JSON answer of N
// bytes (at most 16 MiB; each size made once); with ?delayus=N it answers
// after N µs (at most 10 s). It declares the length, as a handler that
// knows its answer does.
func staticHandler() http.Handler {
	var mu sync.Mutex
	bodies := map[int][]byte{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := staticBody
		q := r.URL.Query()
		if s := q.Get("delayus"); s != "" {
			us, err := strconv.Atoi(s)
			if err != nil || us < 0 || us > 10_000_000 {
				http.Error(w, "delayus: up to 10 s in µs", http.StatusBadRequest)
				return
			}
			t := time.NewTimer(time.Duration(us) * time.Microsecond)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		if s := q.Get("bytes"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 || n > 16<<20 {
				http.Error(w, "bytes: a size up to 16 MiB", http.StatusBadRequest)
				return
			}
			mu.Lock()
			if bodies[n] == nil {
				bodies[n] = staticAnswer(n)
			}
			body = bodies[n]
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	})
}

// pacing is what the static run copies of a measured API case: its
// successful requests per second and its answers' mean size; Delay, when
// set, holds each static answer back (see inFlight).
type pacing struct {
	Rate  float64
	Bytes int
	Delay time.Duration
}

// inFlight is p with each answer held back for 75% of the case's mean
// latency, workers/rate in a closed loop (Little's law), so that the
// static run at p.Rate has about as many requests in flight as the case's
// workers; the 25% left is for the gateway's own time on a busy machine
// (at 90% a run fell 20% short of the rate), so that the pacing, not the
// delay, sets the rate.
func (p pacing) inFlight(workers int) pacing {
	if p.Rate > 0 {
		p.Delay = time.Duration(0.75 * float64(workers) / p.Rate * float64(time.Second)).Round(time.Microsecond)
	}
	return p
}

// pacingOf is the pacing of a measured case; false when it had no
// successful request (nothing to copy).
func pacingOf(r loadgen.Result) (pacing, bool) {
	if r.Requests == 0 || r.RPS <= 0 {
		return pacing{}, false
	}
	return pacing{Rate: r.RPS, Bytes: int((r.BodyBytes + int64(r.Requests)/2) / int64(r.Requests))}, true
}

// path is the static route's URL path for answers of p.Bytes after p.Delay.
func (p pacing) path() string {
	path := staticPath + "?bytes=" + strconv.Itoa(p.Bytes)
	if p.Delay > 0 {
		path += "&delayus=" + strconv.FormatInt(p.Delay.Microseconds(), 10)
	}
	return path
}

// runPacedStatic drives the static route at p.Rate for the warm-up and
// the window, at most workers requests in flight, with answers of p.Bytes
// (an answer of another size is an error).
func runPacedStatic(ctx context.Context, client *http.Client, baseURL string, p pacing, workers int, warmup, duration time.Duration) (loadgen.Result, error) {
	url := baseURL + p.path()
	return loadgen.Run(ctx, loadgen.Config{
		Concurrency: workers,
		Rate:        p.Rate,
		Warmup:      warmup,
		Duration:    duration,
		Call: func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK {
				return &loadgen.StatusError{Method: req.Method, Path: p.path(), Status: resp.StatusCode}
			}
			if n != int64(p.Bytes) {
				return fmt.Errorf("GET %s: %d-byte answer", p.path(), n)
			}
			return nil
		},
	})
}

// pacedRun is what the paced static runs need of the bench.
type pacedRun struct {
	stdout           io.Writer
	client           *http.Client
	baseURL          string
	traefikAPI       string // Traefik's API entrypoint (pprof with -profile)
	pids             func() map[string]int
	workers          int // the case's
	warmup, duration time.Duration
	profileDir       string
}

// gatewayRow is one API case's Traefik CPU per request beside the static
// route's; zero figures were not measured.
type gatewayRow struct {
	Case                                           string
	Pacing                                         pacing
	Workers                                        int
	API, StaticClosed, StaticPaced, StaticInFlight time.Duration
}

// pacedStatic measures the static route at the API case's rate and answer
// size, then with as many requests in flight too, and prints the
// comparison; with a profile directory, Traefik's profiles of the runs are
// <case>.static-paced.traefik.pprof and <case>.static-inflight.traefik.pprof.
// An error is a failed run (more than 1% of its requests failed).
func pacedStatic(ctx context.Context, r pacedRun, name string, p pacing, apiCPU, closedCPU time.Duration) (gatewayRow, error) {
	row := gatewayRow{Case: name, Pacing: p, Workers: r.workers, API: apiCPU, StaticClosed: closedCPU}
	var err error
	if row.StaticPaced, err = r.measure(ctx, name+".static-paced", p); err == nil {
		row.StaticInFlight, err = r.measure(ctx, name+".static-inflight", p.inFlight(r.workers))
	}
	fmt.Fprintf(r.stdout, "%-18s gateway CPU: %s\n", "", gatewayLine(row))
	return row, err
}

// measure runs the static route as p says and returns Traefik's CPU per
// request; profile names the run's profile file.
func (r pacedRun) measure(ctx context.Context, profile string, p pacing) (time.Duration, error) {
	var profiled chan error
	if r.profileDir != "" {
		profiled = make(chan error, 1)
		go func() {
			select {
			case <-time.After(r.warmup):
			case <-ctx.Done():
				profiled <- ctx.Err()
				return
			}
			profiled <- profileURL(ctx, r.traefikAPI, r.duration, filepath.Join(r.profileDir, profile+".traefik.pprof"))
		}()
	}
	before := cpuTimes(r.pids(), "")
	res, err := runPacedStatic(ctx, r.client, r.baseURL, p, r.workers, r.warmup, r.duration)
	after := cpuTimes(r.pids(), "")
	if profiled != nil {
		if perr := <-profiled; err == nil && perr != nil {
			err = fmt.Errorf("profile: %w", perr)
		}
	}
	if err != nil {
		return 0, err
	}
	what := "paced"
	if p.Delay > 0 {
		what = fmt.Sprintf("in flight (answers after %s)", round(p.Delay))
	}
	fmt.Fprintf(r.stdout, "%-18s static %s: %s\n", "", what, res)
	if res.FirstError != "" {
		fmt.Fprintf(r.stdout, "%-18s static %s first error: %s\n", "", what, res.FirstError)
	}
	if total := res.Requests + res.Errors; total == 0 || res.Errors*100 > total {
		return 0, fmt.Errorf("static %s: %d ok, %d errors, first: %s", what, res.Requests, res.Errors, res.FirstError)
	}
	return perRequest(before, after, "traefik", res.Completed), nil
}

// printGateway is the table of the API cases' Traefik CPU per request.
func printGateway(w io.Writer, rows []gatewayRow) error {
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nTraefik CPU per request (µs) of each case and of the static route: closed loop (the baseline), "+
		"paced at the case's req/s with its answer size, and so with as many requests in flight\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "case\treq/s\tanswer bytes\ttraefik\tstatic\tratio\tstatic paced\tratio\twithin %.1fx\tstatic in flight\tratio\t\n", gatewayTarget)
	cell := func(api, static time.Duration) (string, string) {
		if static <= 0 {
			return "-", "-"
		}
		return strconv.FormatInt(static.Microseconds(), 10), fmt.Sprintf("%.2f", ratio(api, static))
	}
	for _, r := range rows {
		closed, closedRatio := cell(r.API, r.StaticClosed)
		paced, pacedRatio := cell(r.API, r.StaticPaced)
		inflight, inflightRatio := cell(r.API, r.StaticInFlight)
		verdict := "-"
		if r.StaticPaced > 0 {
			verdict = "yes"
			if ratio(r.API, r.StaticPaced) > gatewayTarget {
				verdict = "no"
			}
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Case, r.Pacing.Rate, r.Pacing.Bytes, r.API.Microseconds(),
			closed, closedRatio, paced, pacedRatio, verdict, inflight, inflightRatio)
	}
	return tw.Flush()
}

// perRequest is a process's CPU between two readings per request.
func perRequest(before, after map[string]time.Duration, name string, requests int) time.Duration {
	if requests <= 0 {
		return 0
	}
	return (after[name] - before[name]) / time.Duration(requests)
}

// gatewayLine compares a case's Traefik CPU per request with the static
// route's: closed loop (the baseline case), paced at the case's rate and
// size (the verdict), and so with as many requests in flight; a zero
// figure was not measured.
func gatewayLine(r gatewayRow) string {
	s := fmt.Sprintf("traefik %dµs", r.API.Microseconds())
	if r.StaticClosed > 0 {
		s += fmt.Sprintf("; static closed loop %dµs (%.2fx)", r.StaticClosed.Microseconds(), ratio(r.API, r.StaticClosed))
	}
	if r.StaticPaced <= 0 {
		return s + "; static at the same rate and size: not measured"
	}
	x := ratio(r.API, r.StaticPaced)
	verdict := "holds"
	if x > gatewayTarget {
		verdict = "missed"
	}
	s += fmt.Sprintf("; static at %.0f req/s, %d-byte answers %dµs (%.2fx): %.1fx at equal rate and size %s",
		r.Pacing.Rate, r.Pacing.Bytes, r.StaticPaced.Microseconds(), x, gatewayTarget, verdict)
	if r.StaticInFlight > 0 {
		s += fmt.Sprintf("; with %d in flight %dµs (%.2fx)", r.Workers, r.StaticInFlight.Microseconds(), ratio(r.API, r.StaticInFlight))
	}
	return s
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }
