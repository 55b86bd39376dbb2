package postgres_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/services/tickets/internal/tickets"
)

func storedVote(t *testing.T, pool *pgxpool.Pool, messageID int64) string {
	t.Helper()
	var v string
	err := pool.QueryRow(context.Background(), `SELECT coalesce((SELECT vote FROM message_votes WHERE message_id = $1), '')`, messageID).Scan(&v)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func voteEvents(t *testing.T, pool *pgxpool.Pool) []contracts.Event[contracts.MessageVoted] {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT data FROM outbox WHERE subject LIKE '%message.voted' ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []contracts.Event[contracts.MessageVoted]
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			t.Fatal(err)
		}
		var e contracts.Event[contracts.MessageVoted]
		if err := json.Unmarshal(data, &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func TestVoteLastOneCounts(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	m := seedMessage(t, pool, tenantA)
	rep := int64(42)
	if _, err := pool.Exec(ctx, `UPDATE tickets SET customer_rep_id = $1 WHERE ticket_id = $2`, rep, m.ticketID); err != nil {
		t.Fatal(err)
	}
	target, err := s.Vote(ctx, m.messageID, m.token, tickets.VoteLike)
	if err != nil {
		t.Fatal(err)
	}
	if target.CustomerID != tenantA || target.TicketID != m.ticketID || target.CustomerRepID == nil || *target.CustomerRepID != rep {
		t.Fatalf("target %+v", target)
	}
	if v := storedVote(t, pool, m.messageID); v != tickets.VoteLike {
		t.Fatalf("vote %q", v)
	}
	if _, err := s.Vote(ctx, m.messageID, m.token, tickets.VoteDislike); err != nil {
		t.Fatal(err)
	}
	if v := storedVote(t, pool, m.messageID); v != tickets.VoteDislike {
		t.Fatalf("vote %q after dislike", v)
	}
	evs := voteEvents(t, pool)
	if len(evs) != 2 || evs[1].Data.Vote != tickets.VoteDislike || evs[1].Data.MessageID != m.messageID ||
		evs[1].Data.TicketID != m.ticketID || evs[1].CustomerID != tenantA {
		t.Fatalf("events %+v", evs)
	}
}

// A wrong token, another ticket's token (even the same customer's) and an
// unknown message are the same not found, and change nothing.
func TestVoteNeedsTheMessagesTicketToken(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	m := seedMessage(t, pool, tenantA)
	sibling := seedMessage(t, pool, tenantA)
	foreign := seedMessage(t, pool, tenantB)
	for name, tc := range map[string]struct {
		message int64
		token   string
	}{
		"wrong token":          {m.messageID, "not-a-token"},
		"sibling ticket token": {m.messageID, sibling.token},
		"foreign ticket token": {m.messageID, foreign.token},
		"foreign message":      {foreign.messageID, m.token},
		"unknown message":      {1 << 40, m.token},
		"empty token":          {m.messageID, ""},
	} {
		if _, err := s.Vote(ctx, tc.message, tc.token, tickets.VoteLike); !apperr.Is(err, apperr.NotFound) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if v := storedVote(t, pool, m.messageID); v != "" {
		t.Fatalf("vote stored: %q", v)
	}
	if evs := voteEvents(t, pool); len(evs) != 0 {
		t.Fatalf("events %+v", evs)
	}
}

// Concurrent votes on one message: one row, holding the vote of the last
// event written.
func TestConcurrentVotesKeepOneRow(t *testing.T) {
	s, pool := newStore(t)
	ctx := context.Background()
	m := seedMessage(t, pool, tenantA)
	var wg sync.WaitGroup
	for i := range 20 {
		vote := tickets.VoteLike
		if i%2 == 1 {
			vote = tickets.VoteDislike
		}
		wg.Go(func() {
			if _, err := s.Vote(ctx, m.messageID, m.token, vote); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM message_votes WHERE message_id = $1`, m.messageID).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	evs := voteEvents(t, pool)
	if rows != 1 || len(evs) != 20 {
		t.Fatalf("%d rows, %d events", rows, len(evs))
	}
	if last := evs[len(evs)-1].Data.Vote; storedVote(t, pool, m.messageID) != last {
		t.Fatalf("stored %q, last event %q", storedVote(t, pool, m.messageID), last)
	}
}
