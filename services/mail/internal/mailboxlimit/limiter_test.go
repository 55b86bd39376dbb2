package mailboxlimit_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/pkg/redistest"
	"supportplatform.dev/services/mail/internal/graph"
	"supportplatform.dev/services/mail/internal/mailboxlimit"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// replica is one process's Redis client and limiter.
func replica(t *testing.T, rdb *redis.Client, prefix string, s mailboxlimit.Settings) *mailboxlimit.Limiter {
	t.Helper()
	own := redis.NewClient(rdb.Options()) // each replica has its own connections
	t.Cleanup(func() { _ = own.Close() })
	l, err := mailboxlimit.New(own, prefix, s, quiet, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func settings() mailboxlimit.Settings {
	return mailboxlimit.Settings{Concurrency: 4, Budget: 10000, Window: 10 * time.Minute, Lease: 30 * time.Second}
}

// Three replicas' limiters never let more than 4 holders of one mailbox
// run at once, while another mailbox has its own 4.
func TestConcurrencyAcrossReplicas(t *testing.T) {
	rdb, prefix := redistest.Open(t, "mbx")
	var ls []*mailboxlimit.Limiter
	for range 3 {
		ls = append(ls, replica(t, rdb, prefix, settings()))
	}
	var held, peak, otherHeld, otherPeak atomic.Int64
	track := func(cur, top *atomic.Int64) func() {
		n := cur.Add(1)
		for {
			p := top.Load()
			if n <= p || top.CompareAndSwap(p, n) {
				break
			}
		}
		return func() { cur.Add(-1) }
	}
	ctx := t.Context()
	var wg sync.WaitGroup
	for _, l := range ls {
		for range 6 {
			wg.Go(func() {
				for range 5 {
					for _, mb := range []string{"busy", "other"} {
						release, err := l.Acquire(ctx, "tenant\x00"+mb)
						if err != nil {
							t.Error(err)
							return
						}
						var done func()
						if mb == "busy" {
							done = track(&held, &peak)
						} else {
							done = track(&otherHeld, &otherPeak)
						}
						time.Sleep(3 * time.Millisecond)
						done()
						release()
					}
				}
			})
		}
	}
	wg.Wait()
	if peak.Load() != 4 || otherPeak.Load() != 4 {
		t.Errorf("peaks %d and %d holders, want 4 each", peak.Load(), otherPeak.Load())
	}
}

// A waiter waits for a slot another replica gives back, and its wait ends
// with its context.
func TestWaitForAnotherReplica(t *testing.T) {
	rdb, prefix := redistest.Open(t, "mbx")
	holder, waiter := replica(t, rdb, prefix, settings()), replica(t, rdb, prefix, settings())
	var releases []func()
	for range 4 {
		r, err := holder.Acquire(t.Context(), "k")
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, r)
	}
	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := waiter.Acquire(short, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("while 4 leases live: %v, want the context's end", err)
	}
	got := make(chan error, 1)
	go func() {
		r, err := waiter.Acquire(t.Context(), "k")
		if err == nil {
			r()
		}
		got <- err
	}()
	releases[0]()
	releases[0]() // a second call gives nothing back twice
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	for _, r := range releases[1:] {
		r()
	}
}

// A lease not extended (its holder died) expires on Redis's clock.
func TestUnextendedLeaseExpires(t *testing.T) {
	rdb, prefix := redistest.Open(t, "mbx")
	s := settings()
	s.Concurrency, s.Lease = 1, time.Second
	l := replica(t, rdb, prefix, s)
	// A lease written as a dead replica leaves it: no holder extends it.
	release, err := l.Acquire(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ks, err := rdb.Keys(t.Context(), prefix+"*:leases").Result()
	if err != nil || len(ks) != 1 {
		t.Fatalf("lease keys %v, %v", ks, err)
	}
	keys := ks[0]
	// Replace the live holder's lease by one of a dead replica, due in 1 s.
	tm, err := rdb.Time(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.Del(t.Context(), keys).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAdd(t.Context(), keys, redis.Z{Score: float64(tm.Add(time.Second).UnixMilli()), Member: "dead"}).Err(); err != nil {
		t.Fatal(err)
	}
	other := replica(t, rdb, prefix, s)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	r, err := other.Acquire(ctx, "k")
	if err != nil {
		t.Fatalf("the dead lease never expired: %v", err)
	}
	r()
}

// The budget per window holds across replicas: past it, a caller whose
// context ends before the window does is refused at once.
func TestBudgetAcrossReplicas(t *testing.T) {
	rdb, prefix := redistest.Open(t, "mbx")
	s := settings()
	s.Budget, s.Window = 6, time.Hour
	a, b := replica(t, rdb, prefix, s), replica(t, rdb, prefix, s)
	for i := range 6 {
		l := a
		if i%2 == 1 {
			l = b
		}
		release, err := l.Acquire(t.Context(), "k")
		if err != nil {
			t.Fatal(err)
		}
		release()
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := b.Acquire(ctx, "k")
	var be *mailboxlimit.BudgetError
	if !errors.As(err, &be) || be.RetryAfter <= time.Minute || be.RetryAfter > time.Hour {
		t.Fatalf("past the budget: %v", err)
	}
	// Another mailbox has its own budget.
	release, err := a.Acquire(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	release()
}

// While Redis does not answer, the slots are the process's own: calls go on.
func TestRedisDownFallsBackToLocal(t *testing.T) {
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = down.Close() })
	s := settings()
	s.Concurrency = 2
	l, err := mailboxlimit.New(down, "x:", s, quiet, nil)
	if err != nil {
		t.Fatal(err)
	}
	r1, err1 := l.Acquire(t.Context(), "k")
	r2, err2 := l.Acquire(t.Context(), "k")
	if err1 != nil || err2 != nil {
		t.Fatalf("%v, %v", err1, err2)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := l.Acquire(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third local slot: %v", err)
	}
	r1()
	r2()
}

const (
	clientID     = "11111111-2222-4333-8444-555555555555"
	clientSecret = "s3cret"
	tenant       = "6f1c2d3e-aaaa-4bbb-8ccc-000000000001"
	mailbox      = "busy@contoso.example"
)

// Three replicas import from one busy mailbox at Graph, which answers a
// fifth concurrent request per app and mailbox 429 MailboxConcurrency.
// With per-process limits (4 each, 12 at once) Graph throttles many
// requests; with the limit shared in Redis, none.
func TestThreeReplicasBusyMailbox(t *testing.T) {
	tests := []struct {
		name   string
		shared bool
	}{
		{"per-process limits", false},
		{"limit shared in Redis", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := graphfake.New(graphfake.Options{ClientID: clientID, ClientSecret: clientSecret,
				MailboxLimits: graphfake.MailboxLimits{RetryAfter: 20 * time.Millisecond}})
			srv := httptest.NewServer(fake)
			t.Cleanup(srv.Close)
			id, err := fake.AddMail(graphfake.DeliverMail{Mailbox: mailbox, Subject: "busy"})
			if err != nil {
				t.Fatal(err)
			}
			fake.SetMailLatency(25 * time.Millisecond)
			rdb, prefix := redistest.Open(t, "mbx3")
			var wg sync.WaitGroup
			var failed atomic.Int64
			for range 3 {
				cfg := graph.Config{ClientID: clientID, ClientSecret: clientSecret, TokenURL: srv.URL + "/{tenant}/oauth2/v2.0/token",
					BaseURL: srv.URL + "/v1.0", HTTPClient: srv.Client()}
				if tt.shared {
					cfg.Limiter = replica(t, rdb, prefix, settings())
				}
				c, err := graph.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				// Each replica imports with 8 folders at once, as IMPORT_CONCURRENCY does.
				for range 8 {
					wg.Go(func() {
						for range 6 {
							if _, err := c.Message(t.Context(), tenant, mailbox, id); err != nil {
								failed.Add(1)
							}
						}
					})
				}
			}
			wg.Wait()
			throttled := fake.MailboxThrottled()
			stats := fake.MailboxStats(mailbox)
			t.Logf("%s: %d calls, %d answered 429, peak %d in flight, %d failed after retries", tt.name, stats.Calls+throttled.Concurrency,
				throttled.Concurrency, stats.Peak, failed.Load())
			if tt.shared {
				if throttled.Concurrency != 0 || failed.Load() != 0 || stats.Peak > 4 || stats.MessageCalls != 3*8*6 {
					t.Errorf("shared limit: %d 429s, %d failed, peak %d, %d reads; want none, none, at most 4, 144",
						throttled.Concurrency, failed.Load(), stats.Peak, stats.MessageCalls)
				}
			} else if throttled.Concurrency < 20 {
				t.Errorf("per-process limits: only %d 429s; the test does not load the mailbox enough", throttled.Concurrency)
			}
		})
	}
}
