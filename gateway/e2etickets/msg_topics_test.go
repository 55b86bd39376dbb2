package e2etickets

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
)

func msgPutTopics(t *testing.T, token string, messageID int64, ids ...int64) *e2ekit.Response {
	t.Helper()
	if ids == nil {
		ids = []int64{}
	}
	return client(t).Do(http.MethodPut, msgID(messageID)+"/topics", token, map[string]any{"topicIds": ids})
}

func msgTopicNames(m msgBody) []string {
	var out []string
	for _, tp := range m.Topics {
		out = append(out, tp.TopicName)
	}
	return out
}

// msgCreateAction makes an action and maps it to a topic with a priority
// (as the tenant's admin); it returns the mapping's id.
func msgCreateAction(t *testing.T, tn tenant, topicID int64, name string, priority int, active bool) int64 {
	t.Helper()
	c := client(t)
	var a struct {
		ActionID int64 `json:"actionID"`
	}
	wantStatus(t, c.Do(http.MethodPost, "/api/Actions", tn.AdminToken,
		map[string]any{"name": name, "hookName": "hook-" + strings.ToLower(name), "isActive": true}), http.StatusCreated, &a)
	var m struct {
		TopicActionID int64 `json:"topicActionID"`
	}
	wantStatus(t, c.Do(http.MethodPost, "/api/TopicActions", tn.AdminToken,
		map[string]any{"topicID": topicID, "actionID": a.ActionID, "priority": priority, "isActive": active}), http.StatusCreated, &m)
	return m.TopicActionID
}

func TestMsgTopics(t *testing.T) {
	t.Parallel()
	w := msgNewWorld(t)
	sfx := randid.Hex(3)
	billing := createTopic(t, w.tn, "Billing "+sfx)
	shipping := createTopic(t, w.tn, "Shipping "+sfx)
	returns := createTopic(t, w.tn, "Returns "+sfx)
	// Billing has two active actions (and an inactive one); shipping one.
	late := msgCreateAction(t, w.tn, billing, "Late"+sfx, 20, true)
	early := msgCreateAction(t, w.tn, billing, "Early"+sfx, 5, true)
	msgCreateAction(t, w.tn, billing, "Off"+sfx, 1, false)
	ship := msgCreateAction(t, w.tn, shipping, "Ship"+sfx, 10, true)
	m := w.open(t, "Where is my invoice and my parcel?")

	// Duplicates are ignored; the order given is the order kept.
	wantStatus(t, msgPutTopics(t, w.tn.AgentToken, m.MessageID, billing, shipping, billing), http.StatusNoContent, nil)
	got := msgGet(t, w.tn.AgentToken, m.MessageID)
	if fmt.Sprint(msgTopicNames(got)) != fmt.Sprint([]string{"Billing " + sfx, "Shipping " + sfx}) || got.Topics[0].TopicID != billing ||
		got.Topics[0].TicketMessageTopicID == 0 {
		t.Fatalf("topics %+v", got.Topics)
	}
	// The same list again changes and triggers nothing.
	wantStatus(t, msgPutTopics(t, w.tn.AgentToken, m.MessageID, shipping, billing), http.StatusNoContent, nil)
	// Replace: keep shipping (same ticketMessageTopicID), add returns.
	wantStatus(t, msgPutTopics(t, w.tn.AgentToken, m.MessageID, shipping, returns), http.StatusNoContent, nil)
	again := msgGet(t, w.tn.AgentToken, m.MessageID)
	if fmt.Sprint(msgTopicNames(again)) != fmt.Sprint([]string{"Shipping " + sfx, "Returns " + sfx}) ||
		again.Topics[0].TicketMessageTopicID != got.Topics[1].TicketMessageTopicID {
		t.Fatalf("replaced %+v (before %+v)", again.Topics, got.Topics)
	}

	// Actions of the first assignment, by priority across topics:
	// early (5), ship (10), late (20); nothing for the later PUTs.
	triggered := msgEvents(t, contracts.EventTopicActionTriggered, w.tn.CustomerID, 3,
		func(d contracts.TopicActionTriggered) bool { return d.MessageID == m.MessageID })
	var order []int64
	for _, d := range triggered {
		order = append(order, d.TopicActionID)
		if d.TicketID != m.TicketID || d.ActionID == 0 || d.HookName == "" {
			t.Fatalf("triggered %+v", d)
		}
	}
	if fmt.Sprint(order) != fmt.Sprint([]int64{early, ship, late}) {
		t.Fatalf("triggered %v, want early %d, ship %d, late %d", order, early, ship, late)
	}
	assigned := msgEvents(t, contracts.EventTopicsAssigned, w.tn.CustomerID, 2,
		func(d contracts.TopicsAssigned) bool { return d.MessageID == m.MessageID })
	if fmt.Sprint(assigned[1].TopicIDs) != fmt.Sprint([]int64{shipping, returns}) || assigned[1].Source != "manual" {
		t.Fatalf("assigned %+v", assigned)
	}

	// Validation.
	other := newTenant(t)
	foreign := createTopic(t, other, "Foreign "+sfx)
	many := make([]int64, 21)
	for i := range many {
		many[i] = int64(i + 1)
	}
	c := client(t)
	for _, tc := range []struct {
		name, body, want string
	}{
		{"unknown ids", fmt.Sprintf(`{"topicIds":[%d,%d,%d]}`, billing, 1<<50, foreign), fmt.Sprintf("unknown topics: %d, %d", int64(1<<50), foreign)},
		{"missing", `{}`, ""},
		{"null", `{"topicIds":null}`, ""},
		{"not an array", `{"topicIds":5}`, ""},
		{"a string id", `{"topicIds":["1"]}`, ""},
		{"zero", `{"topicIds":[0]}`, ""},
		{"21 ids", fmt.Sprintf(`{"topicIds":%s}`, strings.ReplaceAll(fmt.Sprint(many), " ", ",")), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.Do(http.MethodPut, msgID(m.MessageID)+"/topics", w.tn.AgentToken, tc.body)
			wantProblem(t, r, http.StatusBadRequest, "topicIds")
			if tc.want != "" && r.Problem(t).Errors["topicIds"] != tc.want {
				t.Fatalf("errors.topicIds %q, want %q", r.Problem(t).Errors["topicIds"], tc.want)
			}
		})
	}
	wantProblem(t, msgPutTopics(t, w.tn.AgentToken, 1<<50, billing), http.StatusNotFound, "")
	if got := msgGet(t, w.tn.AgentToken, m.MessageID); len(got.Topics) != 2 {
		t.Fatalf("after refusals %+v", got.Topics)
	}
	// [] clears.
	wantStatus(t, msgPutTopics(t, w.tn.AgentToken, m.MessageID), http.StatusNoContent, nil)
	if got := msgGet(t, w.tn.AgentToken, m.MessageID); len(got.Topics) != 0 {
		t.Fatalf("cleared %+v", got.Topics)
	}
}

// msgWaitTopics polls the message until its topic names are want.
func msgWaitTopics(t *testing.T, token string, id int64, want []string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := msgTopicNames(msgGet(t, token, id))
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("topics %q after 10 s, want %q", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The ticket's topics as the database computes them for the Tickets API
// (the names on its messages).
func msgTicketTopics(t *testing.T, ticketID int64) []string {
	t.Helper()
	var names []string
	if err := backends.DB.QueryRow(t.Context(), `SELECT coalesce(array_agg(DISTINCT n.name ORDER BY n.name), '{}')
		FROM tickets.ticket_messages m JOIN tickets.message_topics mt ON mt.message_id = m.message_id
		JOIN tickets.topic_names n ON n.customer_id = mt.customer_id AND n.topic_id = mt.topic_id
		WHERE m.ticket_id = $1`, ticketID).Scan(&names); err != nil {
		t.Fatal(err)
	}
	return names
}

// Topic names follow the topics service: a rename shows on the message
// within seconds; a deleted topic leaves the message and the ticket and
// can no longer be assigned or trigger its actions.
func TestMsgTopicRenameAndDelete(t *testing.T) {
	t.Parallel()
	w := msgNewWorld(t)
	sfx := randid.Hex(3)
	doomed := createTopic(t, w.tn, "Doomed "+sfx)
	keep := createTopic(t, w.tn, "Keep "+sfx)
	msgCreateAction(t, w.tn, doomed, "Doom"+sfx, 1, true)
	m := w.open(t, "rename me")
	second := w.add(t, m.TicketID, "EndUser", "and me")
	wantStatus(t, msgPutTopics(t, w.tn.AgentToken, m.MessageID, doomed, keep), http.StatusNoContent, nil)
	wantStatus(t, msgPutTopics(t, w.tn.AgentToken, second.MessageID, doomed), http.StatusNoContent, nil)

	c := client(t)
	wantStatus(t, c.Do(http.MethodPut, fmt.Sprintf("/api/Topics/%d", doomed), w.tn.AdminToken,
		map[string]any{"name": "Renamed " + sfx, "description": "new"}), http.StatusNoContent, nil)
	msgWaitTopics(t, w.tn.AgentToken, m.MessageID, []string{"Renamed " + sfx, "Keep " + sfx})
	msgWaitTopics(t, w.tn.AgentToken, second.MessageID, []string{"Renamed " + sfx})

	wantStatus(t, c.Do(http.MethodDelete, fmt.Sprintf("/api/Topics/%d", doomed), w.tn.AdminToken, nil), http.StatusNoContent, nil)
	msgWaitTopics(t, w.tn.AgentToken, m.MessageID, []string{"Keep " + sfx})
	msgWaitTopics(t, w.tn.AgentToken, second.MessageID, nil)
	if got := msgTicketTopics(t, m.TicketID); fmt.Sprint(got) != fmt.Sprint([]string{"Keep " + sfx}) {
		t.Fatalf("ticket topics %q", got)
	}
	// It cannot be assigned again, so its action never triggers again.
	r := msgPutTopics(t, w.tn.AgentToken, second.MessageID, doomed)
	wantProblem(t, r, http.StatusBadRequest, "topicIds")
	msgEvents(t, contracts.EventTopicActionTriggered, w.tn.CustomerID, 2,
		func(d contracts.TopicActionTriggered) bool { return d.TopicID == doomed })
}

// Concurrent PUTs of different lists on one message: each succeeds, and
// the message ends with exactly one of the lists, never a mix.
func TestMsgTopicsConcurrent(t *testing.T) {
	t.Parallel()
	w := msgNewWorld(t)
	sfx := randid.Hex(3)
	var ids []int64
	for i := range 6 {
		ids = append(ids, createTopic(t, w.tn, fmt.Sprintf("Race %d %s", i, sfx)))
	}
	m := w.open(t, "race")
	lists := [][]int64{{ids[0], ids[1], ids[2]}, {ids[3], ids[4]}, {ids[5]}, {ids[1], ids[3], ids[5]}}
	var mu sync.Mutex
	n := 0
	counts := e2ekit.Parallel(12, func() *e2ekit.Response {
		// Each request takes the next list, under the counter's lock.
		mu.Lock()
		l := lists[n%len(lists)]
		n++
		mu.Unlock()
		return msgPutTopics(t, w.tn.AgentToken, m.MessageID, l...)
	})
	if counts[http.StatusNoContent] != 12 {
		t.Fatalf("statuses %v", counts)
	}
	var got []int64
	for _, tp := range msgGet(t, w.tn.AgentToken, m.MessageID).Topics {
		got = append(got, tp.TopicID)
	}
	slices.Sort(got)
	for _, l := range lists {
		s := slices.Clone(l)
		slices.Sort(s)
		if slices.Equal(s, got) {
			return
		}
	}
	t.Fatalf("topics %v are none of %v", got, lists)
}
