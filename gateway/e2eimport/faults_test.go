package e2eimport

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/pkg/randid"
)

// The fault tests are not parallel: Go runs them first, alone, and they
// replace the stack's import worker by replicas of their own, which then
// serve the parallel tests.

// replicas are the import workers running after the fault tests.
var replicas struct {
	mu   sync.Mutex
	list []*stack.Replica
}

func startWorker(t *testing.T) *stack.Replica {
	t.Helper()
	r, err := stk.StartReplica(t.Context(), "importreply")
	if err != nil {
		t.Fatalf("start an import worker: %v", err)
	}
	replicas.mu.Lock()
	replicas.list = append(replicas.list, r)
	replicas.mu.Unlock()
	return r
}

// burst delivers n mails to the channel from workers goroutines, calling
// at(i) after the i-th delivery (1-based); a notification the gateway
// refuses is sent again, as Graph retries a 5xx.
func burst(t *testing.T, mc mailChannel, prefix string, n, workers int, at func(i int64)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var next, done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				d := graphfake.DeliverMail{Mailbox: mc.mailbox, Subject: fmt.Sprintf("%s %04d", prefix, i),
					From: graphfake.Address{Address: fmt.Sprintf("burst-%d@customer.example", i%50)}, Text: fmt.Sprintf("mail %d", i)}
				if err := deliverRetrying(ctx, mc, d); err != nil {
					errs <- err
					return
				}
				if at != nil {
					at(done.Add(1))
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// deliverRetrying stores a mail in the fake Graph and notifies the
// folder's subscription (twice, as Graph does) until the gateway takes the
// notification: during an outage mailingest answers 503 and Graph retries.
func deliverRetrying(ctx context.Context, mc mailChannel, d graphfake.DeliverMail) error {
	if _, err := graph.AddMail(d); err != nil {
		return err
	}
	for {
		status, err := graph.Notify(ctx, *mc.folder.ProviderSubscriptionID, 2)
		if err == nil && status/100 == 2 {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err, fmt.Errorf("last status %d", status))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitExactly waits until the channel has n tickets, then delivers one
// more mail and waits for it (every import before it has run), and checks
// that the tickets number exactly n+1, each with exactly one message.
func waitExactly(t *testing.T, mc mailChannel, n int) {
	t.Helper()
	e2ekit.Eventually(t, 3*time.Minute, fmt.Sprintf("%d tickets", n), func() bool { return mc.tickets(t).TotalCount >= n })
	marker := "Marker " + randid.Hex(4)
	mc.deliver(t, graphfake.DeliverMail{Subject: marker, From: sender("Marker"), Text: "last"})
	mc.waitTicket(t, marker)
	var tickets, messages, distinct int
	err := backends.DB.QueryRow(t.Context(), `SELECT count(DISTINCT t.ticket_id), count(m.message_id), count(DISTINCT m.provider_message_id)
		FROM tickets.tickets t JOIN tickets.ticket_messages m ON m.ticket_id = t.ticket_id WHERE t.channel_id = $1`,
		mc.channel.ChannelID).Scan(&tickets, &messages, &distinct)
	if err != nil {
		t.Fatal(err)
	}
	if tickets != n+1 || messages != n+1 || distinct != n+1 {
		t.Fatalf("%d tickets, %d messages, %d distinct mails; want %d each", tickets, messages, distinct, n+1)
	}
}

// Three import workers share the work; one is killed with SIGKILL in the
// middle of a burst of 1,000 mails and started again: every mail is a
// ticket once.
func TestBurstWithReplicasAndAKill(t *testing.T) {
	if err := stk.StopService("importreply"); err != nil {
		t.Fatal(err)
	}
	a := startWorker(t)
	startWorker(t)
	startWorker(t)
	mcs := []mailChannel{newMailChannel(t), newMailChannel(t)}
	var wg sync.WaitGroup
	var killed atomic.Bool
	start := time.Now()
	for i, mc := range mcs {
		wg.Go(func() {
			burst(t, mc, fmt.Sprintf("Burst %d", i), 500, 4, func(n int64) {
				if n == 150 && i == 0 && killed.CompareAndSwap(false, true) {
					a.Kill()
					t.Logf("killed %s after %s", a.Name, time.Since(start).Round(time.Millisecond))
					startWorker(t)
				}
			})
		})
	}
	wg.Wait()
	t.Logf("1,000 mails delivered in %s", time.Since(start).Round(time.Millisecond))
	for _, mc := range mcs {
		waitExactly(t, mc, 500)
	}
	t.Logf("all imported after %s", time.Since(start).Round(time.Millisecond))
}

// NATS stops for two seconds in the middle of a burst and comes back: the
// services reconnect by themselves and every mail is a ticket once.
func TestNATSRestartDuringBurst(t *testing.T) {
	mc := newMailChannel(t)
	var restarted atomic.Bool
	restartDone := make(chan error, 1)
	start := time.Now()
	burst(t, mc, "Outage", 400, 4, func(n int64) {
		if n == 100 && restarted.CompareAndSwap(false, true) {
			go func() { restartDone <- stk.RestartNATS(context.WithoutCancel(t.Context()), 2*time.Second) }()
		}
	})
	if err := <-restartDone; err != nil {
		t.Fatalf("restart NATS: %v", err)
	}
	waitExactly(t, mc, 400)
	t.Logf("400 mails through a NATS restart in %s", time.Since(start).Round(time.Millisecond))
}
