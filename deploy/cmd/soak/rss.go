package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// parseVmRSS reads the resident set size, in bytes, from the contents of
// /proc/<pid>/status ("VmRSS:	  123456 kB").
func parseVmRSS(status []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("VmRSS line %q", sc.Text())
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 {
			return 0, fmt.Errorf("VmRSS line %q", sc.Text())
		}
		return kb * 1024, nil
	}
	return 0, errors.New("no VmRSS line (a zombie or a kernel thread)")
}

// readRSS reads the RSS of every process of pids; a process that is gone
// is left out.
func readRSS(pids map[string]int) map[string]int64 {
	out := map[string]int64{}
	for name, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		if rss, err := parseVmRSS(data); err == nil {
			out[name] = rss
		}
	}
	return out
}

// rssRecorder keeps every process's RSS read at intervals during the run.
type rssRecorder struct {
	mu       sync.Mutex
	readings []rssReading
}

type rssReading struct {
	at  time.Duration // since the run's start
	rss map[string]int64
}

// run reads the RSS of pids every interval, from t0 on, until ctx ends.
func (r *rssRecorder) run(ctx context.Context, t0 time.Time, interval time.Duration, pids func() map[string]int) {
	every(ctx, interval, func() bool {
		r.add(time.Since(t0), readRSS(pids()))
		return true
	})
}

// every calls fn each interval until ctx ends or fn returns false.
func every(ctx context.Context, interval time.Duration, fn func() bool) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !fn() {
				return
			}
		}
	}
}

func (r *rssRecorder) add(at time.Duration, rss map[string]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.readings = append(r.readings, rssReading{at: at, rss: rss})
}

// last is the time of the latest reading.
func (r *rssRecorder) last() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.readings) == 0 {
		return 0
	}
	return r.readings[len(r.readings)-1].at
}

// median is every process's median RSS over the readings taken in [from,
// to) (nil when there are none; a process seen in only some of them is
// taken over those).
func (r *rssRecorder) median(from, to time.Duration) map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	values := map[string][]int64{}
	for _, x := range r.readings {
		if x.at < from || x.at >= to {
			continue
		}
		for name, v := range x.rss {
			values[name] = append(values[name], v)
		}
	}
	if len(values) == 0 {
		return nil
	}
	out := map[string]int64{}
	for name, vs := range values {
		slices.Sort(vs)
		if n := len(vs); n%2 == 1 {
			out[name] = vs[n/2]
		} else {
			out[name] = (vs[n/2-1] + vs[n/2]) / 2
		}
	}
	return out
}

// peak is every process's largest RSS of the run.
func (r *rssRecorder) peak() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int64{}
	for _, x := range r.readings {
		for name, v := range x.rss {
			out[name] = max(out[name], v)
		}
	}
	return out
}

// growth is the change from start to end in percent of start.
func growth(start, end int64) float64 {
	if start <= 0 {
		return 0
	}
	return float64(end-start) * 100 / float64(start)
}

// rssRow is one process's line of the report.
type rssRow struct {
	Name             string
	Start, End, Peak int64
	Growth           float64
	Target           bool // the platform's services are held to the limit; traefik and nats are shown only
}

// rssRows pairs the two readings, services (in the given order) first.
func rssRows(services []string, start, end, peak map[string]int64) []rssRow {
	var rows []rssRow
	seen := map[string]bool{}
	for _, s := range services {
		if v, ok := start[s]; ok {
			rows = append(rows, rssRow{Name: s, Start: v, End: end[s], Peak: peak[s], Growth: growth(v, end[s]), Target: true})
			seen[s] = true
		}
	}
	var others []string
	for name := range start {
		if !seen[name] {
			others = append(others, name)
		}
	}
	slices.Sort(others)
	for _, name := range others {
		rows = append(rows, rssRow{Name: name, Start: start[name], End: end[name], Peak: peak[name], Growth: growth(start[name], end[name])})
	}
	return rows
}

// verdict lists the targets a run missed: any error, a service whose RSS
// grew by limit percent or more, or one that is gone at the end.
func verdict(errs int, rows []rssRow, limit float64) []string {
	var missed []string
	if errs > 0 {
		missed = append(missed, fmt.Sprintf("%d requests failed (target 0)", errs))
	}
	for _, r := range rows {
		switch {
		case !r.Target:
		case r.End == 0:
			missed = append(missed, r.Name+": not running at the end")
		case r.Growth >= limit:
			missed = append(missed, fmt.Sprintf("%s: RSS grew %.1f%% (target < %.0f%%)", r.Name, r.Growth, limit))
		}
	}
	return missed
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
