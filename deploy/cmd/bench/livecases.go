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
)

func liveFanoutCase() *benchCase {
	return &benchCase{
		Name: "live-fanout", Needs: []string{"auth", "mailingest", "tickets", "live"},
		Note: fmt.Sprintf("%d streams of the bench customer open through the gateway; %d tickets created through the API, one every %s: "+
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

// openStreams opens n streams with the bench admin's bearer token; each
// reports its ticket.created receipts on out. They stay open until ctx
// ends.
func openStreams(ctx context.Context, e *benchEnv, n int, out chan<- receipt) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	opened := make(chan struct{}, n)
	sem := make(chan struct{}, 64)
	for range n {
		wg.Go(func() {
			sem <- struct{}{}
			req, err := e.API.NewRequest(ctx, http.MethodGet, "/api/live/events", "")
			if err != nil {
				<-sem
				errs <- err
				return
			}
			e.API.Authorize(req)
			resp, err := e.API.HTTP.Do(req)
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

	receipts := make(chan receipt, liveStreams*4)
	start := time.Now()
	if err := openStreams(ctx, e, liveStreams, receipts); err != nil {
		return nil, err
	}
	lines := []string{fmt.Sprintf("%d streams open in %s", liveStreams, time.Since(start).Round(time.Millisecond))}

	sent := map[int64]time.Time{}
	got := map[int64][]time.Time{}
	tick := time.NewTicker(liveInterval)
	defer tick.Stop()
	for i := range liveEvents {
		t0 := time.Now()
		body, err := e.API.Do(ctx, http.MethodPost, "/api/Tickets",
			fmt.Sprintf(`{"subject":"Live bench %d","channelID":%d,"endUserID":%d}`, i, ch.ChannelID, eu.EndUserID), http.StatusCreated)
		var tk struct {
			TicketID int64 `json:"ticketID"`
		}
		if err != nil || json.Unmarshal(body, &tk) != nil {
			return lines, fmt.Errorf("ticket: %v", err)
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
				return lines, ctx.Err()
			}
		}
	}
	// The last ones.
	deadline := time.After(5 * time.Second)
	for complete(got, sent) < len(sent) {
		select {
		case r := <-receipts:
			got[r.ticketID] = append(got[r.ticketID], r.at)
		case <-deadline:
			return lines, fmt.Errorf("after 5 s, %d of %d events reached every stream", complete(got, sent), len(sent))
		}
	}
	var spread, endToEnd []time.Duration
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
	lines = append(lines,
		fmt.Sprintf("fan-out spread over %d streams (%d receipts): p50 %s, p99 %s, max %s",
			liveStreams, len(spread), pct(spread, 50), pct(spread, 99), pct(spread, 100)),
		fmt.Sprintf("POST /api/Tickets sent -> received on a stream: p50 %s, p99 %s, max %s",
			pct(endToEnd, 50), pct(endToEnd, 99), pct(endToEnd, 100)))
	if p := pct(spread, 99); p >= liveFanoutP99 {
		return lines, fmt.Errorf("fan-out p99 %s is not under %s", p, liveFanoutP99)
	}

	// Idle streams: the ones above stay open, the rest are opened now.
	pid, ok := e.Stack.PIDs()["live"]
	if !ok {
		return lines, errors.New("live is not running")
	}
	before := memKB(pid, "status", "VmRSS:")
	start = time.Now()
	if err := openStreams(ctx, e, liveIdleStreams-liveStreams, nil); err != nil {
		return lines, err
	}
	opened := time.Since(start)
	rss := memKB(pid, "status", "VmRSS:")
	lines = append(lines, fmt.Sprintf("%d idle streams (opened in %s): live RSS %d MB (%d MB with %d streams)",
		liveIdleStreams, opened.Round(time.Millisecond), rss/1024, before/1024, liveStreams))
	if rss/1024 >= liveIdleRSSMB {
		return lines, fmt.Errorf("live RSS %d MB with %d streams is not under %d MB", rss/1024, liveIdleStreams, liveIdleRSSMB)
	}
	return lines, nil
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
