package graphfake

import (
	"net/http"
	"sync"
	"testing"
	"time"
)

// waitInFlight polls until n mail calls of the mailbox are being served.
func (e *env) waitInFlight(mailbox string, n int) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.fake.MailboxStats(mailbox).InFlight != n {
		if time.Now().After(deadline) {
			e.t.Fatalf("never %d calls in flight: %+v", n, e.fake.MailboxStats(mailbox))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A fifth concurrent request for one mailbox is answered 429 MailboxConcurrency with
// Retry-After, as Graph does per app and mailbox; another mailbox and the subscription API are
// not affected; switched off, the fake serves any number.
func TestMailboxConcurrencyThrottled(t *testing.T) {
	for _, off := range []bool{false, true} {
		name := "on by default"
		if off {
			name = "off"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, func(o *Options) { o.MailboxLimits.Off = off })
			tok := e.token(tenantA)
			id, err := e.fake.AddMail(DeliverMail{Mailbox: agent, Subject: "s"})
			if err != nil {
				t.Fatal(err)
			}
			e.fake.SetMailLatency(300 * time.Millisecond)
			var wg sync.WaitGroup
			statuses := make([]int, 4)
			for i := range 4 {
				wg.Go(func() { statuses[i] = e.get("/users/"+agent+"/messages/"+id, tok, "").status })
			}
			e.waitInFlight(agent, 4)
			fifth := e.get("/users/"+agent+"/messages/"+id, tok, "")
			other := e.get("/users/other@contoso.example/messages/"+id, tok, "") // 404: no such mail, not throttled
			subs := e.get("/subscriptions", tok, "")
			wg.Wait()
			for _, s := range statuses {
				if s != http.StatusOK {
					t.Fatalf("first four: %v", statuses)
				}
			}
			if other.status != http.StatusNotFound || subs.status != http.StatusOK {
				t.Errorf("other mailbox %d, subscriptions %d", other.status, subs.status)
			}
			if off {
				if fifth.status != http.StatusOK {
					t.Fatalf("throttling off: fifth %d %s", fifth.status, fifth.body)
				}
				return
			}
			if fifth.status != http.StatusTooManyRequests || fifth.errorCode() != "MailboxConcurrency" || fifth.header.Get("Retry-After") != "1" {
				t.Fatalf("fifth: %d %s %s", fifth.status, fifth.header.Get("Retry-After"), fifth.body)
			}
			if got := e.fake.MailboxThrottled(); got.Concurrency != 1 || got.Budget != 0 {
				t.Errorf("throttled %+v", got)
			}
			// Once the others are done, the mailbox serves again.
			e.fake.SetMailLatency(0)
			if r := e.get("/users/"+agent+"/messages/"+id, tok, ""); r.status != http.StatusOK {
				t.Errorf("after: %d", r.status)
			}
		})
	}
}

// Beyond the budget of the window, 429 ApplicationThrottled until the window ends.
func TestMailboxBudgetThrottled(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.MailboxLimits = MailboxLimits{Budget: 3, Window: time.Minute, RetryAfter: 2128 * time.Millisecond}
	})
	tok := e.token(tenantA)
	id, err := e.fake.AddMail(DeliverMail{Mailbox: agent, Subject: "s"})
	if err != nil {
		t.Fatal(err)
	}
	path := "/users/" + agent + "/messages/" + id
	for i := range 3 {
		if r := e.get(path, tok, ""); r.status != http.StatusOK {
			t.Fatalf("request %d: %d", i+1, r.status)
		}
	}
	r := e.get(path, tok, "")
	if r.status != http.StatusTooManyRequests || r.errorCode() != "ApplicationThrottled" || r.header.Get("Retry-After") != "2.128" {
		t.Fatalf("fourth: %d %s %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	// The mailbox path's case or form does not open a new budget.
	if r := e.get("/users/AGENT@contoso.example/messages/"+id, tok, ""); r.status != http.StatusTooManyRequests {
		t.Fatalf("other spelling: %d", r.status)
	}
	e.clock.Advance(time.Minute)
	if r := e.get(path, tok, ""); r.status != http.StatusOK {
		t.Fatalf("next window: %d %s", r.status, r.body)
	}
	if got := e.fake.MailboxThrottled(); got.Budget != 2 || got.Concurrency != 0 {
		t.Errorf("throttled %+v", got)
	}
}
