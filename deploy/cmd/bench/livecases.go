package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"supportplatform.dev/pkg/randid"
)

// The live service's budgets (issue 24): one event fanned out to the
// 1,000 open streams of a customer, p99 under 100 ms; 10,000 idle streams on
// one replica under 200 MB RSS.
const (
	liveStreams     = 1000
	liveEvents      = 20
	liveInterval    = 200 * time.Millisecond
	liveIdleStreams = 10_000
	liveFanoutP99   = 100 * time.Millisecond
	liveIdleRSSMB   = 200
	// liveIdleWait is well within a stream's life (REQUEST_TIMEOUT).
	liveIdleWait = 20 * time.Second
	// liveDrainWait covers two heartbeats (LIVE_HEARTBEAT): a stream
	// whose client went away ends at its next one.
	liveDrainWait = 40 * time.Second
)

func liveFanoutCase() *benchCase {
	return &benchCase{
		Name: "live-fanout", Needs: []string{"auth", "mailingest", "tickets", "live"},
		Note: fmt.Sprintf("%d streams of the bench customer open through the gateway, then straight to the service; %d tickets created through the API, one every %s: "+
			"each ticket.created's spread over the streams (first -> each receipt, target p99 < %s) and POST -> receipt; "+
			"then %d idle streams and the live process's RSS (target < %d MB)",
			liveStreams, liveEvents, liveInterval, liveFanoutP99, liveIdleStreams, liveIdleRSSMB),
		Latency: liveFanout,
	}
}

// receipt is one stream's receipt of a ticket.created.
type receipt struct {
	ticketID int64
	at       time.Time
}

// openStreams opens n streams at base (the gateway, or the live service
// itself) with the bench admin's bearer token; each reports its
// ticket.created receipts on out. They stay open until ctx ends.
func openStreams(ctx context.Context, e *benchEnv, hc *http.Client, base string, n int, out chan<- receipt) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	opened := make(chan struct{}, n)
	sem := make(chan struct{}, 64)
	for range n {
		wg.Go(func() {
			sem <- struct{}{}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/live/events", nil)
			if err != nil {
				<-sem
				errs <- err
				return
			}
			e.API.Authorize(req)
			resp, err := hc.Do(req)
			<-sem
			if err != nil {
				errs <- err
				return
			}
			if resp.StatusCode != http.StatusOK {
				resp.Body.Close()
				errs <- fmt.Errorf("stream: status %d", resp.StatusCode)
				return
			}
			opened <- struct{}{}
			go func() {
				defer resp.Body.Close()
				sc := bufio.NewScanner(resp.Body)
				event := ""
				for sc.Scan() {
					line := sc.Text()
					switch {
					case strings.HasPrefix(line, "event: "):
						event = line[7:]
					case strings.HasPrefix(line, "data: ") && event == "ticket.created" && out != nil:
						var d struct {
							TicketID int64 `json:"ticketID"`
						}
						if json.Unmarshal([]byte(line[6:]), &d) == nil {
							select {
							case out <- receipt{d.TicketID, time.Now()}:
							case <-ctx.Done():
								return
							}
						}
					case line == "":
						event = ""
					}
				}
			}()
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return fmt.Errorf("%d of %d streams opened; first error: %w", len(opened), n, err)
	}
	return nil
}

func liveFanout(ctx context.Context, e *benchEnv) ([]string, error) {
	if e.Stack == nil {
		return nil, errors.New("no stack")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if e.MetricsURL["live"] == "" {
		return nil, errors.New("live's address is unknown")
	}
	var ch struct {
		ChannelID int64 `json:"channelID"`
	}
	var eu struct {
		EndUserID int64 `json:"endUserID"`
	}
	body, err := e.API.Do(ctx, http.MethodPost, "/api/Channels", `{"name":"Live bench `+randid.Hex(3)+`","kind":"web"}`, http.StatusCreated)
	if err != nil || json.Unmarshal(body, &ch) != nil {
		return nil, fmt.Errorf("channel: %v", err)
	}
	body, err = e.API.Do(ctx, http.MethodPost, "/api/EndUsers", `{"name":"Live bench"}`, http.StatusCreated)
	if err != nil || json.Unmarshal(body, &eu) != nil {
		return nil, fmt.Errorf("end user: %v", err)
	}

	// Through the gateway, as consoles get them; then straight from the
	// service (the gateway and this client share the machine's CPUs with
	// it, and spread its writes).
	gw := e.API.HTTP
	direct := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: liveStreams}}
	liveURL := strings.TrimSuffix(e.MetricsURL["live"], "/metrics")
	var lines []string
	var failed []string
	for _, via := range []struct {
		name string
		hc   *http.Client
		base string
	}{{"through the gateway", gw, e.API.BaseURL}, {"from the service directly", direct, liveURL}} {
		sctx, stop := context.WithCancel(ctx)
		spread, endToEnd, opened, err := fanout(sctx, e, via.hc, via.base, ch.ChannelID, eu.EndUserID)
		stop()
		if err != nil {
			return lines, fmt.Errorf("%s: %w", via.name, err)
		}
		lines = append(lines,
			fmt.Sprintf("%s: %d streams open in %s; spread over the streams (%d receipts): p50 %s, p99 %s, max %s; "+
				"POST /api/Tickets sent -> received: p50 %s, p99 %s, max %s",
				via.name, liveStreams, opened.Round(time.Millisecond), len(spread), pct(spread, 50), pct(spread, 99), pct(spread, 100),
				pct(endToEnd, 50), pct(endToEnd, 99), pct(endToEnd, 100)))
		if p := pct(spread, 99); p >= liveFanoutP99 {
			failed = append(failed, fmt.Sprintf("fan-out p99 %s is not under %s %s", p, liveFanoutP99, via.name))
		}
	}

	// Idle streams, straight to the service (the client holds one
	// connection each). The streams of the fan-out were closed by their
	// client; the service notices at their next heartbeat. The figures
	// before are read once they are gone.
	pid, ok := e.Stack.PIDs()["live"]
	if !ok {
		return lines, errors.New("live is not running")
	}
	metrics := e.MetricsURL["live"]
	if err := awaitGauge(ctx, metrics, "live_streams_open", 0, liveDrainWait); err != nil {
		return lines, fmt.Errorf("the fan-out's streams: %w", err)
	}
	before := memKB(pid, "status", "VmRSS:")
	start := time.Now()
	idle := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: liveIdleStreams}}
	if err := openStreams(ctx, e, idle, liveURL, liveIdleStreams, nil); err != nil {
		return lines, err
	}
	opened := time.Since(start)
	atOpen := memKB(pid, "status", "VmRSS:")
	// Idle for a while: the garbage of opening them is collected and
	// returned (heartbeats and revocation checks go on).
	select {
	case <-time.After(liveIdleWait):
	case <-ctx.Done():
		return lines, ctx.Err()
	}
	rss, anon := memKB(pid, "status", "VmRSS:"), memKB(pid, "status", "RssAnon:")
	// Where it goes: the Go runtime's own figures (the rest of the RSS is
	// the binary's mapped file and the runtime's free pages).
	var figures [4]float64
	for i, name := range []string{"live_streams_open", "go_goroutines", "go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes"} {
		v, err := counter(ctx, metrics, name)
		if err != nil {
			return lines, err
		}
		figures[i] = v
	}
	if int(figures[0]) != liveIdleStreams {
		return lines, fmt.Errorf("live has %v streams open, want %d", figures[0], liveIdleStreams)
	}
	lines = append(lines, fmt.Sprintf("%d idle streams (opened in %s): live RSS %d MB after %s idle (%d MB anonymous; %d MB once opened, %d MB before: %.1f KB a stream); "+
		"%v goroutines, heap in use %.1f MB, stacks %.1f MB",
		liveIdleStreams, opened.Round(time.Millisecond), rss/1024, liveIdleWait, anon/1024, atOpen/1024, before/1024,
		float64(rss-before)/liveIdleStreams, figures[1], figures[2]/(1<<20), figures[3]/(1<<20)))
	if rss/1024 >= liveIdleRSSMB {
		failed = append(failed, fmt.Sprintf("live RSS %d MB with %d streams is not under %d MB", rss/1024, liveIdleStreams, liveIdleRSSMB))
	}
	if len(failed) > 0 {
		return lines, errors.New(strings.Join(failed, "; "))
	}
	return lines, nil
}

// fanout opens liveStreams streams at base, creates liveEvents tickets
// through the gateway and returns each receipt's delay after the first
// receipt of its event (the spread) and after its POST was sent.
func fanout(ctx context.Context, e *benchEnv, hc *http.Client, base string, channelID, endUserID int64) (spread, endToEnd []time.Duration, opened time.Duration, err error) {
	receipts := make(chan receipt, liveStreams*4)
	start := time.Now()
	if err := openStreams(ctx, e, hc, base, liveStreams, receipts); err != nil {
		return nil, nil, 0, err
	}
	opened = time.Since(start)
	sent := map[int64]time.Time{}
	got := map[int64][]time.Time{}
	tick := time.NewTicker(liveInterval)
	defer tick.Stop()
	for i := range liveEvents {
		t0 := time.Now()
		body, err := e.API.Do(ctx, http.MethodPost, "/api/Tickets",
			fmt.Sprintf(`{"subject":"Live bench %d","channelID":%d,"endUserID":%d}`, i, channelID, endUserID), http.StatusCreated)
		var tk struct {
			TicketID int64 `json:"ticketID"`
		}
		if err != nil || json.Unmarshal(body, &tk) != nil {
			return nil, nil, 0, fmt.Errorf("ticket: %v", err)
		}
		sent[tk.TicketID] = t0
	drain:
		for {
			select {
			case r := <-receipts:
				got[r.ticketID] = append(got[r.ticketID], r.at)
			case <-tick.C:
				break drain
			case <-ctx.Done():
				return nil, nil, 0, ctx.Err()
			}
		}
	}
	deadline := time.After(5 * time.Second)
	for complete(got, sent) < len(sent) {
		select {
		case r := <-receipts:
			got[r.ticketID] = append(got[r.ticketID], r.at)
		case <-deadline:
			return nil, nil, 0, fmt.Errorf("after 5 s, %d of %d events reached every stream", complete(got, sent), len(sent))
		}
	}
	for id, t0 := range sent {
		ts := got[id]
		first := slices.MinFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		for _, at := range ts {
			spread = append(spread, at.Sub(first))
			endToEnd = append(endToEnd, at.Sub(t0))
		}
	}
	slices.Sort(spread)
	slices.Sort(endToEnd)
	return spread, endToEnd, opened, nil
}

// awaitGauge waits until the metric name at url reads want.
func awaitGauge(ctx context.Context, url, name string, want float64, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		v, err := counter(ctx, url, name)
		if err != nil {
			return err
		}
		if v == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is %v after %s, want %v", name, v, wait, want)
		}
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// complete counts the events that reached every stream.
func complete(got map[int64][]time.Time, sent map[int64]time.Time) int {
	n := 0
	for id := range sent {
		if len(got[id]) >= liveStreams {
			n++
		}
	}
	return n
}
