package e2etickets

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/contracts"
)

type fbBody struct {
	AgentAvailable  bool   `json:"agentAvailable"`
	CustomerRepName string `json:"customerRepName"`
}

// fbVote clicks a feedback link, without any bearer token.
func fbVote(t *testing.T, messageID int64, token, vote string) *e2ekit.Response {
	t.Helper()
	q := url.Values{}
	if token != "" {
		q.Set("token", token)
	}
	if vote != "" {
		q.Set("vote", vote)
	}
	return client(t).Do(http.MethodPost, fmt.Sprintf("/api/TicketMessages/%d/feedback?%s", messageID, q.Encode()), "", nil)
}

func fbStoredVote(t *testing.T, messageID int64) string {
	t.Helper()
	var v string
	if err := backends.DB.QueryRow(t.Context(), `SELECT coalesce((SELECT vote FROM tickets.message_votes WHERE message_id = $1), '')`,
		messageID).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func fbSetAvailable(t *testing.T, token string, available bool) {
	t.Helper()
	wantStatus(t, client(t).Do(http.MethodPut, "/api/Accounts/me/availability", token, map[string]bool{"available": available}),
		http.StatusNoContent, nil)
}

// Like, then dislike: one vote per message, the last one counts, and each
// vote is a message.voted event of the customer.
func TestFbLastVoteCounts(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	m := attSeedMessage(t, tn)
	var res fbBody
	wantStatus(t, fbVote(t, m.MessageID, m.Token, "like"), http.StatusOK, &res)
	if res.AgentAvailable || res.CustomerRepName != "" {
		t.Fatalf("new accounts are unavailable: %+v", res)
	}
	if v := fbStoredVote(t, m.MessageID); v != "like" {
		t.Fatalf("stored %q", v)
	}
	wantStatus(t, fbVote(t, m.MessageID, m.Token, "dislike"), http.StatusOK, &res)
	if v := fbStoredVote(t, m.MessageID); v != "dislike" {
		t.Fatalf("stored %q after dislike", v)
	}
	var rows int
	if err := backends.DB.QueryRow(t.Context(), `SELECT count(*) FROM tickets.message_votes WHERE message_id = $1`, m.MessageID).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("%d vote rows, %v", rows, err)
	}
	var votes []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		votes = nil
		for _, data := range backends.Messages(t, contracts.StreamEvents, contracts.EventSubject(contracts.EventMessageVoted)) {
			var ev contracts.Event[contracts.MessageVoted]
			if json.Unmarshal(data, &ev) == nil && ev.CustomerID == tn.CustomerID && ev.Data.MessageID == m.MessageID &&
				ev.Data.TicketID == m.TicketID {
				votes = append(votes, ev.Data.Vote)
			}
		}
		if len(votes) == 2 || time.Now().After(deadline) {
			break
		}
	}
	if len(votes) != 2 || votes[0] != "like" || votes[1] != "dislike" {
		t.Fatalf("message.voted events: %v", votes)
	}
}

// Only the message's own ticket token opens the link; every mismatch is the
// same 404, and nothing is stored. Missing parameters are 400s naming them.
func TestFbTokens(t *testing.T) {
	t.Parallel()
	tn, other := newTenant(t), newTenant(t)
	m := attSeedMessage(t, tn)
	sibling := attSeedMessage(t, tn)
	foreign := attSeedMessage(t, other)
	for name, r := range map[string]*e2ekit.Response{
		"wrong token":                 fbVote(t, m.MessageID, "not-the-token", "like"),
		"token of a sibling ticket":   fbVote(t, m.MessageID, sibling.Token, "like"),
		"token of another customer":   fbVote(t, m.MessageID, foreign.Token, "like"),
		"message of another customer": fbVote(t, foreign.MessageID, m.Token, "like"),
		"unknown message":             fbVote(t, 1<<50, m.Token, "like"),
		"token with a different case": fbVote(t, m.MessageID, flipCase(m.Token), "like"),
		"a very long token":           fbVote(t, m.MessageID, m.Token+strings.Repeat("x", 300), "like"),
	} {
		t.Run(name, func(t *testing.T) {
			wantProblem(t, r, http.StatusNotFound, "")
			if p := r.Problem(t); p.Detail != "no message of a ticket with this token" {
				t.Fatalf("detail %q", p.Detail)
			}
		})
	}
	wantProblem(t, fbVote(t, m.MessageID, "", "like"), http.StatusBadRequest, "token")
	wantProblem(t, fbVote(t, m.MessageID, m.Token, ""), http.StatusBadRequest, "vote")
	wantProblem(t, fbVote(t, m.MessageID, m.Token, "love"), http.StatusBadRequest, "vote")
	wantProblem(t, fbVote(t, m.MessageID, m.Token, "LIKE"), http.StatusBadRequest, "vote")
	wantProblem(t, client(t).Do(http.MethodPost, "/api/TicketMessages/abc/feedback?vote=like&token=x", "", nil), http.StatusBadRequest, "id")
	wantProblem(t, client(t).Do(http.MethodPost, fmt.Sprintf("/api/TicketMessages/%d/feedback?vote=like&vote=dislike&token=%s",
		m.MessageID, m.Token), "", nil), http.StatusBadRequest, "vote")
	for _, id := range []int64{m.MessageID, sibling.MessageID, foreign.MessageID} {
		if v := fbStoredVote(t, id); v != "" {
			t.Fatalf("vote stored on %d: %q", id, v)
		}
	}
	// The ticket's own token works, also from a client with a bearer token.
	wantStatus(t, client(t).Do(http.MethodPost, fmt.Sprintf("/api/TicketMessages/%d/feedback?vote=like&token=%s", m.MessageID, m.Token),
		other.AdminToken, nil), http.StatusOK, nil)
}

func flipCase(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z':
			b[i] = c - 32
		case c >= 'A' && c <= 'Z':
			b[i] = c + 32
		}
	}
	return string(b)
}

// agentAvailable follows PUT /api/Accounts/me/availability: the assigned
// agent's, or with none assigned any admin's or agent's.
func TestFbAgentAvailability(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	m := attSeedMessage(t, tn)
	vote := func() fbBody {
		t.Helper()
		var res fbBody
		wantStatus(t, fbVote(t, m.MessageID, m.Token, "like"), http.StatusOK, &res)
		return res
	}
	if res := vote(); res != (fbBody{}) {
		t.Fatalf("nobody available yet: %+v", res)
	}
	fbSetAvailable(t, tn.AdminToken, true)
	if res := vote(); res != (fbBody{AgentAvailable: true}) {
		t.Fatalf("admin available, none assigned: %+v", res)
	}
	agent := accountID(t, tn.AgentToken)
	exec(t, `UPDATE tickets.tickets SET customer_rep_id = $1 WHERE ticket_id = $2`, agent, m.TicketID)
	if res := vote(); res != (fbBody{AgentAvailable: false, CustomerRepName: "Agent"}) {
		t.Fatalf("assigned agent away, admin available: %+v", res)
	}
	fbSetAvailable(t, tn.AgentToken, true)
	if res := vote(); res != (fbBody{AgentAvailable: true, CustomerRepName: "Agent"}) {
		t.Fatalf("assigned agent available: %+v", res)
	}
	fbSetAvailable(t, tn.AgentToken, false)
	fbSetAvailable(t, tn.AdminToken, false)
	if res := vote(); res != (fbBody{AgentAvailable: false, CustomerRepName: "Agent"}) {
		t.Fatalf("everyone away: %+v", res)
	}
}

// FEEDBACK_LIMIT_PER_TOKEN (30 a minute by default) holds under
// concurrent clicks on one link: exactly 30 pass, the rest are 429 with
// Retry-After; another ticket's link is not affected.
func TestFbRateLimitPerToken(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	m := attSeedMessage(t, tn)
	const limit, clicks = 30, 36
	counts := e2ekit.Parallel(clicks, func() *e2ekit.Response { return fbVote(t, m.MessageID, m.Token, "like") })
	if counts[http.StatusOK] != limit || counts[http.StatusTooManyRequests] != clicks-limit {
		t.Fatalf("statuses %v, want %d x 200 and %d x 429", counts, limit, clicks-limit)
	}
	r := fbVote(t, m.MessageID, m.Token, "dislike")
	wantProblem(t, r, http.StatusTooManyRequests, "")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	if v := fbStoredVote(t, m.MessageID); v != "like" {
		t.Fatalf("a refused vote was stored: %q", v)
	}
	other := attSeedMessage(t, tn)
	wantStatus(t, fbVote(t, other.MessageID, other.Token, "dislike"), http.StatusOK, nil)
}
