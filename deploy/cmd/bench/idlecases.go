package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// The idle-rss case reads the memory of every Go service once it has
// started and served a few requests (the warm-up): what a replica costs
// when nothing is happening. It runs before the load cases, which leave
// their garbage and grown pools behind.
const (
	// idleTargetMB is issue 26's target for each Go service (Traefik aside).
	idleTargetMB = 30
	// idleWarmups is how many times each warm-up request is sent.
	idleWarmups = 3
	// idleSettle lets the last requests' garbage be collected before the
	// reading (the figures are the process's, not a forced GC's).
	idleSettle = 5 * time.Second
)

// idleRequest is one warm-up request through the gateway, as the demo admin.
type idleRequest struct {
	service, method, path, body string
}

// idleRequests touch each routed service's usual path: a login was made
// already (auth), then a list or a lookup per service.
var idleRequests = []idleRequest{
	{"auth", http.MethodGet, "/api/Customers/me", ""},
	{"topics", http.MethodGet, "/api/Topics?pageNumber=1&pageSize=20", ""},
	{"translation", http.MethodGet, "/api/Translations/detect-language-ai?" + url.Values{"country": {"CA"}, "state": {"Quebec"}, "city": {"Montreal"}}.Encode(), ""},
	{"translation", http.MethodPost, "/api/Translations/translate", translateBody(cachedSentence)},
	{"mailingest", http.MethodGet, "/api/Channels?pageNumber=1&pageSize=20", ""},
	{"tickets", http.MethodGet, "/api/Tickets?pageNumber=1&pageSize=20", ""},
	{"tickets", http.MethodGet, "/api/EndUsers?pageNumber=1&pageSize=20", ""},
	{"docs", http.MethodGet, "/docs", ""},
	{"console", http.MethodGet, "/", ""},
}

func idleRSSCase() *benchCase {
	return &benchCase{
		Name:  "idle-rss",
		Needs: []string{"auth"},
		Note: fmt.Sprintf("every Go service's memory after start and a warm-up (%d times: a request per routed service through the gateway, "+
			"/readyz and /metrics on each service's own port), read %s later; target <= %d MB RSS each",
			idleWarmups, idleSettle, idleTargetMB),
		Latency: idleRSS,
	}
}

// idleMem is a process's memory in KiB, from /proc/<pid>/status: the
// resident set, its anonymous part (heap, stacks, the runtime's) and its
// file-mapped part (mostly the binary's pages that were touched).
type idleMem struct{ rss, anon, file int }

func readIdleMem(pid int) idleMem {
	kb := procKB(pid, "status", "VmRSS:", "RssAnon:", "RssFile:")
	return idleMem{rss: kb[0], anon: kb[1], file: kb[2]}
}

func idleRSS(ctx context.Context, e *benchEnv) ([]string, error) {
	if e.Stack == nil {
		return nil, fmt.Errorf("no stack")
	}
	running := map[string]bool{}
	for _, s := range e.Stack.Services {
		running[s] = true
	}
	for range idleWarmups {
		for _, r := range idleRequests {
			if !running[r.service] {
				continue
			}
			if _, err := e.API.Do(ctx, r.method, r.path, r.body, http.StatusOK); err != nil {
				return nil, fmt.Errorf("warm-up %s %s: %w", r.method, r.path, err)
			}
		}
		for name, u := range e.Stack.ServiceURLs {
			for _, p := range []string{"/readyz", "/metrics"} {
				if err := getOK(ctx, u+p); err != nil {
					return nil, fmt.Errorf("warm-up %s%s: %w", name, p, err)
				}
			}
		}
	}
	select {
	case <-time.After(idleSettle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}

	pids := e.Stack.PIDs()
	var names []string
	for name := range pids {
		if name != "traefik" && name != "nats" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "process\tRSS MB\tanonymous MB\tfile-mapped MB\tGo heap in use MB\tGo runtime total MB\t\n")
	var over []string
	var total idleMem
	for _, name := range names {
		m := readIdleMem(pids[name])
		total.rss, total.anon, total.file = total.rss+m.rss, total.anon+m.anon, total.file+m.file
		heap, sys := "-", "-"
		// The first process of a service answers its ServiceURLs' /metrics.
		if u, ok := e.MetricsURL[name]; ok {
			if v, err := counter(ctx, u, "go_memstats_heap_inuse_bytes"); err == nil {
				heap = fmt.Sprintf("%.1f", v/(1<<20))
			}
			if v, err := counter(ctx, u, "go_memstats_sys_bytes"); err == nil {
				sys = fmt.Sprintf("%.1f", v/(1<<20))
			}
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%s\t%s\t\n", name, mb(m.rss), mb(m.anon), mb(m.file), heap, sys)
		if mb(m.rss) > idleTargetMB {
			over = append(over, fmt.Sprintf("%s %.1f", name, mb(m.rss)))
		}
	}
	fmt.Fprintf(tw, "all %d\t%.1f\t%.1f\t%.1f\t\t\t\n", len(names), mb(total.rss), mb(total.anon), mb(total.file))
	if err := tw.Flush(); err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(over) == 0 {
		lines = append(lines, fmt.Sprintf("every process within %d MB RSS", idleTargetMB))
	} else {
		lines = append(lines, fmt.Sprintf("over %d MB RSS: %s (MB)", idleTargetMB, strings.Join(over, ", ")))
	}
	return lines, nil
}

func mb(kib int) float64 { return float64(kib) / 1024 }

// getOK sends a plain GET straight to a service and wants a 200.
func getOK(ctx context.Context, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}
