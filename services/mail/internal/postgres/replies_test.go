package postgres_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/services/mail/internal/postgres"
	"supportplatform.dev/services/mail/internal/replier"
)

// replyEvents reads the reply events in the outbox, in order.
func replyEvents(t *testing.T, pool *pgxpool.Pool) []contracts.Event[contracts.ReplyDelivery] {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT data FROM outbox WHERE subject LIKE 'events.message.reply.%' ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []contracts.Event[contracts.ReplyDelivery]
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			t.Fatal(err)
		}
		var ev contracts.Event[contracts.ReplyDelivery]
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestClaimAndFinishReply(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	r := replier.Reply{CustomerID: 7, MessageID: 100, TicketID: 9, ChannelID: 3}
	lease := clock.Add(time.Minute)

	c, err := s.ClaimReply(ctx, r, replier.ClaimRequest{LeaseUntil: lease})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Claimed || c.Settled || c.Status != replier.StatusSending || c.Attempts != 1 || c.LeaseUntil == nil || !c.LeaseUntil.Equal(lease) {
		t.Fatalf("first claim: %+v", c)
	}
	// A second delivery while the first holds it: not claimed, the lease shown.
	c2, err := s.ClaimReply(ctx, r, replier.ClaimRequest{LeaseUntil: lease.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if c2.Claimed || c2.Status != replier.StatusSending || c2.Attempts != 1 || !c2.LeaseUntil.Equal(lease) {
		t.Fatalf("second claim: %+v", c2)
	}
	// A transient failure: pending again with the error and the retry time.
	retryAt := clock.Add(5 * time.Second)
	if ok, err := s.FinishReply(ctx, r, 1, replier.Finish{Status: replier.StatusPending, Error: "503", Method: replier.MethodSendMail, RetryAt: retryAt}); err != nil || !ok {
		t.Fatalf("finish retry: %v %v", ok, err)
	}
	rec, err := s.SentReply(ctx, r.CustomerID, r.MessageID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != replier.StatusPending || rec.LastError != "503" || rec.LeaseUntil != nil || rec.NextAttemptAt == nil ||
		!rec.NextAttemptAt.Equal(retryAt) || rec.Method != replier.MethodSendMail {
		t.Fatalf("after retry: %+v", rec)
	}
	if evs := replyEvents(t, pool); len(evs) != 0 {
		t.Fatalf("events after a retry: %+v", evs)
	}
	// The finish of a lapsed attempt changes nothing.
	if ok, err := s.FinishReply(ctx, r, 1, replier.Finish{Status: replier.StatusSent}); err != nil || ok {
		t.Fatalf("finish of a pending row: %v %v", ok, err)
	}
	c3, err := s.ClaimReply(ctx, r, replier.ClaimRequest{LeaseUntil: lease})
	if err != nil || !c3.Claimed || c3.Attempts != 2 {
		t.Fatalf("claim after retry: %+v %v", c3, err)
	}
	if ok, err := s.FinishReply(ctx, r, 1, replier.Finish{Status: replier.StatusSent}); err != nil || ok {
		t.Fatalf("finish by the older attempt: %v %v", ok, err)
	}
	if ok, err := s.FinishReply(ctx, r, 2, replier.Finish{Status: replier.StatusSent, Method: replier.MethodReply}); err != nil || !ok {
		t.Fatalf("finish sent: %v %v", ok, err)
	}
	rec, _ = s.SentReply(ctx, r.CustomerID, r.MessageID)
	if rec.Status != replier.StatusSent || rec.SentAt == nil || !rec.SentAt.Equal(clock) || rec.Attempts != 2 || rec.Method != replier.MethodReply ||
		rec.LeaseUntil != nil || rec.NextAttemptAt != nil {
		t.Fatalf("sent: %+v", rec)
	}
	evs := replyEvents(t, pool)
	if len(evs) != 1 || evs[0].Type != contracts.EventReplyDelivered || evs[0].CustomerID != 7 ||
		evs[0].Data != (contracts.ReplyDelivery{MessageID: 100, TicketID: 9, Attempts: 2, Error: ""}) {
		t.Fatalf("events: %+v", evs)
	}
	// Sent is final: another claim or settle changes nothing.
	c4, err := s.ClaimReply(ctx, r, replier.ClaimRequest{Settle: replier.StatusFailed, Reason: "x", LeaseUntil: lease})
	if err != nil || c4.Claimed || c4.Settled || c4.Status != replier.StatusSent {
		t.Fatalf("claim of a sent reply: %+v %v", c4, err)
	}
	if n := len(replyEvents(t, pool)); n != 1 {
		t.Fatalf("%d events", n)
	}
	var key string
	if err := pool.QueryRow(ctx, `SELECT idempotency_key FROM sent_replies WHERE customer_id = 7 AND message_id = 100`).Scan(&key); err != nil || key != "7.100" {
		t.Fatalf("idempotency key %q %v", key, err)
	}
}

func TestSettleReply(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	lease := clock.Add(time.Minute)
	skipped := replier.Reply{CustomerID: 1, MessageID: 1, TicketID: 1, ChannelID: 1}
	c, err := s.ClaimReply(ctx, skipped, replier.ClaimRequest{Settle: replier.StatusSkipped, Reason: "not an e-mail channel (web)", LeaseUntil: lease})
	if err != nil || !c.Settled || c.Claimed || c.Status != replier.StatusSkipped || c.Attempts != 0 || c.LastError != "not an e-mail channel (web)" {
		t.Fatalf("skip: %+v %v", c, err)
	}
	if evs := replyEvents(t, pool); len(evs) != 0 {
		t.Fatalf("a skipped reply wrote %+v", evs)
	}
	// The same message id of another customer is another reply.
	failed := replier.Reply{CustomerID: 2, MessageID: 1, TicketID: 5, ChannelID: 6}
	c, err = s.ClaimReply(ctx, failed, replier.ClaimRequest{Settle: replier.StatusFailed, Reason: "the end user has no e-mail address", LeaseUntil: lease})
	if err != nil || !c.Settled || c.Status != replier.StatusFailed {
		t.Fatalf("fail: %+v %v", c, err)
	}
	evs := replyEvents(t, pool)
	if len(evs) != 1 || evs[0].Type != contracts.EventReplyFailed || evs[0].CustomerID != 2 ||
		evs[0].Data != (contracts.ReplyDelivery{MessageID: 1, TicketID: 5, Error: "the end user has no e-mail address"}) {
		t.Fatalf("events: %+v", evs)
	}
	// A row being sent is not settled under its holder's feet.
	sending := replier.Reply{CustomerID: 3, MessageID: 1, TicketID: 1, ChannelID: 1}
	if c, err := s.ClaimReply(ctx, sending, replier.ClaimRequest{LeaseUntil: lease}); err != nil || !c.Claimed {
		t.Fatalf("claim: %+v %v", c, err)
	}
	c, err = s.ClaimReply(ctx, sending, replier.ClaimRequest{Settle: replier.StatusSkipped, Reason: "deleted", LeaseUntil: lease})
	if err != nil || c.Settled || c.Status != replier.StatusSending {
		t.Fatalf("settle of a sending row: %+v %v", c, err)
	}
	if _, err := s.SentReply(ctx, 4, 1); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("missing reply: %v", err)
	}
}

// Concurrent deliveries of one reply, as from two import workers: exactly
// one claims it, the others see it sending; both for a new reply and for
// one waiting for its retry.
func TestConcurrentClaimsOneWinner(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	t.Run("new", func(t *testing.T) {
		concurrentClaims(t, s, replier.Reply{CustomerID: 1, MessageID: 42, TicketID: 1, ChannelID: 1}, 1)
	})
	t.Run("retry", func(t *testing.T) {
		r := replier.Reply{CustomerID: 1, MessageID: 43, TicketID: 1, ChannelID: 1}
		if c, err := s.ClaimReply(ctx, r, replier.ClaimRequest{LeaseUntil: clock.Add(time.Minute)}); err != nil || !c.Claimed {
			t.Fatalf("claim: %+v %v", c, err)
		}
		if ok, err := s.FinishReply(ctx, r, 1, replier.Finish{Status: replier.StatusPending, Error: "429", RetryAt: clock}); err != nil || !ok {
			t.Fatalf("finish: %v %v", ok, err)
		}
		concurrentClaims(t, s, r, 2)
	})
}

func concurrentClaims(t *testing.T, s *postgres.Store, r replier.Reply, attempt int) {
	ctx := context.Background()
	const n = 8
	var mu sync.Mutex
	claimed, sending := 0, 0
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			c, err := s.ClaimReply(ctx, r, replier.ClaimRequest{LeaseUntil: clock.Add(time.Minute)})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("claim: %v", err)
			case c.Claimed:
				claimed++
			case c.Status == replier.StatusSending && c.Attempts == attempt:
				sending++
			default:
				t.Errorf("claim: %+v", c)
			}
		})
	}
	close(start)
	wg.Wait()
	if claimed != 1 || sending != n-1 {
		t.Fatalf("%d claimed, %d saw it sending", claimed, sending)
	}
}
