package tickets

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/pkg/ratelimit"
	"supportplatform.dev/pkg/redistest"
)

type fakeVotes struct {
	mu     sync.Mutex
	target VoteTarget
	token  string
	votes  []string
}

func (s *fakeVotes) Vote(_ context.Context, messageID int64, token, vote string) (VoteTarget, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if messageID != 5 || token != s.token {
		return VoteTarget{}, apperr.E(apperr.NotFound, "message not found")
	}
	s.votes = append(s.votes, vote)
	return s.target, nil
}

type fakeAccounts struct{ accounts []contracts.AccountSummary }

func (a fakeAccounts) Accounts(_ context.Context, _ int64, ids ...int64) ([]contracts.AccountSummary, error) {
	if len(ids) == 0 {
		return a.accounts, nil
	}
	var out []contracts.AccountSummary
	for _, acc := range a.accounts {
		for _, id := range ids {
			if acc.AccountID == id {
				out = append(out, acc)
			}
		}
	}
	return out, nil
}

// limiters are real Redis counters under a prefix of the test's own.
func limiters(t *testing.T, perToken, perIP int) (Limiter, Limiter) {
	t.Helper()
	rdb := redis.NewClient(redistest.Options(t))
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("redis: %v", err)
	}
	prefix := "test:feedback:" + randid.Hex(6) + ":"
	return ratelimit.New(rdb, prefix, perToken, time.Minute), ratelimit.New(rdb, prefix, perIP, time.Minute)
}

func ptr(v int64) *int64 { return &v }

func TestFeedbackAvailability(t *testing.T) {
	accounts := fakeAccounts{[]contracts.AccountSummary{
		{AccountID: 1, Name: "Ada", Role: "admin", Available: false},
		{AccountID: 2, Name: "Bob", Role: "agent", Available: true},
		{AccountID: 3, Name: "Cy", Role: "agent", Available: false},
	}}
	nobody := fakeAccounts{[]contracts.AccountSummary{{AccountID: 1, Name: "Ada"}}}
	for _, tc := range []struct {
		name     string
		rep      *int64
		accounts fakeAccounts
		want     FeedbackResult
	}{
		{"assigned and available", ptr(2), accounts, FeedbackResult{AgentAvailable: true, CustomerRepName: "Bob"}},
		{"assigned and away, others available", ptr(3), accounts, FeedbackResult{AgentAvailable: false, CustomerRepName: "Cy"}},
		{"none assigned, one available", nil, accounts, FeedbackResult{AgentAvailable: true}},
		{"none assigned, none available", nil, nobody, FeedbackResult{}},
		{"assigned account gone", ptr(99), accounts, FeedbackResult{AgentAvailable: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			byToken, byIP := limiters(t, 100, 100)
			store := &fakeVotes{token: "tok", target: VoteTarget{CustomerID: 1, TicketID: 2, CustomerRepID: tc.rep}}
			got, err := NewFeedback(store, tc.accounts, byToken, byIP).Vote(context.Background(),
				FeedbackInput{MessageID: 5, Token: "tok", Vote: VoteLike, ClientIP: "192.0.2.1"})
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestFeedbackValidation(t *testing.T) {
	byToken, byIP := limiters(t, 100, 100)
	store := &fakeVotes{token: "tok"}
	f := NewFeedback(store, fakeAccounts{}, byToken, byIP)
	for _, tc := range []struct {
		name  string
		in    FeedbackInput
		code  apperr.Code
		field string
	}{
		{"no vote", FeedbackInput{MessageID: 5, Token: "tok"}, apperr.Invalid, "vote"},
		{"bad vote", FeedbackInput{MessageID: 5, Token: "tok", Vote: "Like"}, apperr.Invalid, "vote"},
		{"no token", FeedbackInput{MessageID: 5, Vote: VoteLike}, apperr.Invalid, "token"},
		{"wrong token", FeedbackInput{MessageID: 5, Token: "nope", Vote: VoteLike}, apperr.NotFound, ""},
		{"huge token", FeedbackInput{MessageID: 5, Token: string(make([]byte, MaxTokenLen+1)), Vote: VoteLike}, apperr.NotFound, ""},
		{"other message", FeedbackInput{MessageID: 6, Token: "tok", Vote: VoteDislike}, apperr.NotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.Vote(context.Background(), tc.in)
			if !apperr.Is(err, tc.code) {
				t.Fatalf("err %v, want %s", err, tc.code)
			}
			if tc.field != "" && err.(*apperr.Error).Fields[tc.field] == "" {
				t.Fatalf("err %v does not name %s", err, tc.field)
			}
		})
	}
	if len(store.votes) != 0 {
		t.Fatalf("votes stored: %v", store.votes)
	}
}

// Concurrent clicks: exactly the limit pass per token, then per IP across
// tokens; the refusal carries a wait. The first burst stays within the IP's
// limit: a click counts on both counters, in an order that varies between
// concurrent clicks, so an IP limit below the burst would also refuse some
// of the token's first five.
func TestFeedbackRateLimits(t *testing.T) {
	const perToken, perIP = 5, 12
	byToken, byIP := limiters(t, perToken, perIP)
	store := &fakeVotes{token: "tok", target: VoteTarget{CustomerID: 1, TicketID: 2}}
	f := NewFeedback(store, fakeAccounts{}, byToken, byIP)
	statuses := func(n int, in func(i int) FeedbackInput) map[apperr.Code]int {
		var mu sync.Mutex
		out := map[apperr.Code]int{}
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, err := f.Vote(context.Background(), in(i))
				code := apperr.Code("ok")
				if err != nil {
					code = apperr.CodeOf(err)
					if code == apperr.RateLimited && err.(*apperr.Error).RetryAfterSeconds < 1 {
						t.Errorf("no Retry-After: %v", err)
					}
				}
				mu.Lock()
				out[code]++
				mu.Unlock()
			})
		}
		wg.Wait()
		return out
	}
	got := statuses(12, func(int) FeedbackInput {
		return FeedbackInput{MessageID: 5, Token: "tok", Vote: VoteLike, ClientIP: "198.51.100.1"}
	})
	if got["ok"] != perToken || got[apperr.RateLimited] != 12-perToken {
		t.Fatalf("one token: %v", got)
	}
	// Another address is not affected by the first one's token count...
	if _, err := f.Vote(context.Background(), FeedbackInput{MessageID: 5, Token: "other", Vote: VoteLike, ClientIP: "198.51.100.2"}); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("other address: %v", err)
	}
	// ...but the first address has used its 12 clicks: refused whatever
	// the token.
	if _, err := f.Vote(context.Background(), FeedbackInput{MessageID: 5, Token: "fresh", Vote: VoteLike, ClientIP: "198.51.100.1"}); !apperr.Is(err, apperr.RateLimited) {
		t.Fatalf("address over its limit: %v", err)
	}
	got = statuses(16, func(i int) FeedbackInput {
		return FeedbackInput{MessageID: 5, Token: randid.Hex(8), Vote: VoteLike, ClientIP: "203.0.113.9"}
	})
	if got[apperr.NotFound] != perIP || got[apperr.RateLimited] != 16-perIP {
		t.Fatalf("one address, many tokens: %v", got)
	}
}
