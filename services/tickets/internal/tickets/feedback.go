package tickets

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/ratelimit"
)

// Votes of the end user on a message.
const (
	VoteLike    = "like"
	VoteDislike = "dislike"
)

// MaxTokenLen bounds the ticket token of a feedback link (a real one has
// 43 characters); a longer one is simply not found.
const MaxTokenLen = 256

// VoteTarget is what a vote was cast on.
type VoteTarget struct {
	CustomerID    int64
	TicketID      int64
	CustomerRepID *int64
}

// FeedbackStore stores votes.
type FeedbackStore interface {
	// Vote stores vote as the message's vote (replacing an earlier one)
	// and writes message.voted, when the message belongs to the ticket
	// whose token is token; NotFound otherwise.
	Vote(ctx context.Context, messageID int64, token, vote string) (VoteTarget, error)
}

// AccountLookup asks auth about the customer's accounts (lookup.Client).
type AccountLookup interface {
	Accounts(ctx context.Context, customerID int64, ids ...int64) ([]contracts.AccountSummary, error)
}

// Limiter counts hits per key in a window (*ratelimit.Limiter).
type Limiter interface {
	Hit(ctx context.Context, key string) (ratelimit.Result, error)
}

// FeedbackInput is one click on a feedback link.
type FeedbackInput struct {
	MessageID int64
	Token     string
	Vote      string
	ClientIP  string
}

// FeedbackResult tells the end user whether a person can take over.
type FeedbackResult struct {
	AgentAvailable  bool
	CustomerRepName string
}

// Feedback takes the end user's votes through the ticket's link.
type Feedback struct {
	store    FeedbackStore
	accounts AccountLookup
	byToken  Limiter
	byIP     Limiter
}

// NewFeedback returns the feedback service; byToken and byIP limit the
// votes per ticket token and per client IP address.
func NewFeedback(store FeedbackStore, accounts AccountLookup, byToken, byIP Limiter) *Feedback {
	return &Feedback{store: store, accounts: accounts, byToken: byToken, byIP: byIP}
}

// Vote records the end user's vote on a message of the ticket whose token
// the link carries, and tells whether the ticket's agent (or, with none
// assigned, any admin or agent of the customer) is available. A wrong
// token, another ticket's token and an unknown message are the same
// NotFound.
func (f *Feedback) Vote(ctx context.Context, in FeedbackInput) (FeedbackResult, error) {
	var v apperr.Validation
	v.Check(in.Vote == VoteLike || in.Vote == VoteDislike, "vote", "must be like or dislike")
	v.Check(in.Token != "", "token", "is required: the ticket token of the feedback link")
	if err := v.Err(); err != nil {
		return FeedbackResult{}, err
	}
	if err := f.limit(ctx, in); err != nil {
		return FeedbackResult{}, err
	}
	if len(in.Token) > MaxTokenLen {
		return FeedbackResult{}, notFound()
	}
	t, err := f.store.Vote(ctx, in.MessageID, in.Token, in.Vote)
	if apperr.Is(err, apperr.NotFound) {
		return FeedbackResult{}, notFound()
	}
	if err != nil {
		return FeedbackResult{}, err
	}
	// The vote is stored; a retry after a failed lookup stores it again.
	return f.availability(ctx, t)
}

func notFound() error {
	return apperr.E(apperr.NotFound, "no message of a ticket with this token")
}

// limit counts the click per client IP and per token (the token only as
// a hash: Redis never holds the credential) and refuses it when either
// counter is over its limit, with the longer wait.
func (f *Feedback) limit(ctx context.Context, in FeedbackInput) error {
	sum := sha256.Sum256([]byte(in.Token))
	var wait time.Duration
	for _, c := range []struct {
		l   Limiter
		key string
	}{{f.byIP, "ip:" + in.ClientIP}, {f.byToken, "token:" + hex.EncodeToString(sum[:16])}} {
		r, err := c.l.Hit(ctx, c.key)
		if err != nil {
			return apperr.Wrap(apperr.Unavailable, err, "feedback is temporarily unavailable")
		}
		if !r.Allowed && r.RetryAfter > wait {
			wait = r.RetryAfter
		}
	}
	if wait > 0 {
		secs := int((wait + time.Second - 1) / time.Second)
		return &apperr.Error{Code: apperr.RateLimited, Message: "too many votes; try again later", RetryAfterSeconds: max(secs, 1)}
	}
	return nil
}

// availability: the assigned agent's, when the ticket has one whose
// account still exists; else whether any admin or agent is available.
func (f *Feedback) availability(ctx context.Context, t VoteTarget) (FeedbackResult, error) {
	if t.CustomerRepID != nil {
		accs, err := f.accounts.Accounts(ctx, t.CustomerID, *t.CustomerRepID)
		if err != nil {
			return FeedbackResult{}, err
		}
		for _, a := range accs {
			if a.AccountID == *t.CustomerRepID {
				return FeedbackResult{AgentAvailable: a.Available, CustomerRepName: a.Name}, nil
			}
		}
	}
	accs, err := f.accounts.Accounts(ctx, t.CustomerID)
	if err != nil {
		return FeedbackResult{}, err
	}
	for _, a := range accs {
		if a.Available {
			return FeedbackResult{AgentAvailable: true}, nil
		}
	}
	return FeedbackResult{}, nil
}
