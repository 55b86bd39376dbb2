package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/pkg/randid"
)

// The mail-to-ticket case: how long a mail takes from its delivery in the
// (fake) Microsoft Graph to its ticket being visible through the API, with
// one import worker and with three.

const (
	// latencyMails are delivered per round, latencyInterval apart, to
	// latencyMailboxes subscribed inboxes in turn.
	latencyMails     = 200
	latencyInterval  = 50 * time.Millisecond
	latencyMailboxes = 4
	// latencyPoll is how often each inbox's tickets are listed through the
	// API while a round runs (the resolution of the figures).
	latencyPoll = 20 * time.Millisecond
)

func mailToTicketCase() *benchCase {
	return &benchCase{
		Name: "mail-to-ticket", Needs: []string{"auth", "mailingest", "importreply", "tickets"},
		Note: fmt.Sprintf("%d mails, one every %s to %d subscribed inboxes in turn: delivered in the fake Graph (which notifies through the gateway) "+
			"-> ticket listed by GET /api/Tickets (polled every %s); with 1 import worker, then 3. Target p50 < 1 s",
			latencyMails, latencyInterval, latencyMailboxes, latencyPoll),
		Latency: mailToTicket,
	}
}

func mailToTicket(ctx context.Context, e *benchEnv) ([]string, error) {
	if e.Graph == nil || e.Stack == nil {
		return nil, errors.New("no fake Graph or stack")
	}
	targets, err := subscribeFolders(ctx, e, latencyMailboxes)
	if err != nil {
		return nil, err
	}
	var lines []string
	var extra []*stack.Replica
	defer func() {
		for _, r := range extra {
			_ = r.Stop()
		}
	}()
	for _, workers := range []int{1, 3} {
		for len(extra) < workers-1 {
			r, err := e.Stack.StartReplica(ctx, "importreply")
			if err != nil {
				return lines, err
			}
			extra = append(extra, r)
		}
		lats, err := latencyRound(ctx, e, targets, fmt.Sprintf("w%d-%s", workers, randid.Hex(3)))
		if err != nil {
			return lines, fmt.Errorf("%d workers: %w", workers, err)
		}
		lines = append(lines, fmt.Sprintf("%d import worker(s): %d mails, p50 %s, p90 %s, p99 %s, max %s",
			workers, len(lats), pct(lats, 50), pct(lats, 90), pct(lats, 99), pct(lats, 100)))
		if p50 := pct(lats, 50); p50 >= time.Second {
			return lines, fmt.Errorf("%d workers: p50 %s is not under 1 s", workers, p50)
		}
	}
	return lines, nil
}

// latencyRound delivers latencyMails mails and returns each one's time from
// delivery to its ticket in the API.
func latencyRound(ctx context.Context, e *benchEnv, targets []mailTarget, tag string) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	sent := map[string]time.Time{}
	seen := map[string]time.Duration{}
	pollErr := make(chan error, len(targets))
	var wg sync.WaitGroup
	pollCtx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	for _, tg := range targets {
		wg.Go(func() {
			path := fmt.Sprintf("/api/Tickets?channelId=%d&pageSize=100", tg.channelID)
			for pollCtx.Err() == nil {
				data, err := e.API.Do(pollCtx, http.MethodGet, path, "", http.StatusOK)
				now := time.Now()
				if err != nil {
					if pollCtx.Err() == nil {
						pollErr <- err
					}
					return
				}
				var page struct {
					Items []struct{ Subject string }
				}
				if err := json.Unmarshal(data, &page); err != nil {
					pollErr <- err
					return
				}
				mu.Lock()
				for _, it := range page.Items {
					if at, ok := sent[it.Subject]; ok {
						if _, done := seen[it.Subject]; !done {
							seen[it.Subject] = now.Sub(at)
						}
					}
				}
				mu.Unlock()
				select {
				case <-pollCtx.Done():
				case <-time.After(latencyPoll):
				}
			}
		})
	}
	tick := time.NewTicker(latencyInterval)
	defer tick.Stop()
	for i := range latencyMails {
		tg := targets[i%len(targets)]
		subject := fmt.Sprintf("Latency %s %03d", tag, i)
		mu.Lock()
		sent[subject] = time.Now()
		mu.Unlock()
		if _, err := e.Graph.Deliver(ctx, graphfake.DeliverMail{Mailbox: tg.mailbox, Subject: subject,
			From: graphfake.Address{Name: "Bench Customer", Address: fmt.Sprintf("customer-%d@example.org", i%20)},
			Text: "My order has not arrived yet, could you check where it is?"}); err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == latencyMails {
			break
		}
		select {
		case err := <-pollErr:
			return nil, err
		case <-ctx.Done():
			return nil, fmt.Errorf("%d of %d mails became tickets: %w", n, latencyMails, ctx.Err())
		case <-time.After(latencyPoll):
		}
	}
	stopPolling()
	wg.Wait()
	out := make([]time.Duration, 0, len(seen))
	for _, d := range seen {
		out = append(out, d)
	}
	slices.Sort(out)
	return out, nil
}

// pct is the p-th percentile of sorted durations (100: the maximum).
func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	i = min(max(i, 1), len(sorted))
	return sorted[i-1].Round(time.Millisecond)
}
