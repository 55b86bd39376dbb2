package e2escale

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
)

// The stack runs the processes asked for, every routed service's behind
// the gateway as servers of one load balancer.
func TestEveryServiceReplicated(t *testing.T) {
	for _, svc := range stk.Services {
		want := replicas["*"]
		if n, ok := replicas[svc]; ok {
			want = n
		}
		rs := replicasOf(t, svc, want)
		for _, r := range rs {
			resp, err := http.Get(r.URL + "/readyz")
			if err != nil {
				t.Fatalf("%s: %v", r.Name, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s /readyz: %d", r.Name, resp.StatusCode)
			}
		}
	}
	for _, want := range []string{"auth", "topics", "mailingest", "tickets", "translation", "live", "docs", "console"} {
		if !slices.Contains(stk.Services, want) {
			t.Errorf("%s is not started (built: every service is needed)", want)
		}
	}
}

// The gateway spreads requests over a service's processes (round robin, no
// sticky sessions): twenty lists of topics through one client's kept-alive
// connection reach both topics processes.
func TestGatewayBalancesReplicas(t *testing.T) {
	tn := e2ekit.NewTenant(t, stk, client(t), "Balance")
	ts := replicasOf(t, "topics", 2)
	before := []float64{topicLists(t, ts[0].URL), topicLists(t, ts[1].URL)}
	c := client(t)
	for range 20 {
		e2ekit.WantStatus(t, c.Do(http.MethodGet, "/api/Topics", tn.AgentToken, nil), http.StatusOK, nil)
	}
	for i, r := range ts {
		if n := topicLists(t, r.URL) - before[i]; n < 5 {
			t.Errorf("%s served %v of 20 lists", r.Name, n)
		}
	}
}

// topicLists is the http_requests_total of GET /api/Topics of a process.
func topicLists(t *testing.T, url string) float64 {
	return metricSum(t, url, "http_requests_total{", `method="GET"`, `route="/api/Topics"`)
}

// metricSum adds up the samples of a process's /metrics whose line starts
// with prefix (a metric's name and, for labelled ones, "{") and contains
// every label.
func metricSum(t *testing.T, url, prefix string, labels ...string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for line := range strings.Lines(string(data)) {
		if !strings.HasPrefix(line, prefix) || slices.ContainsFunc(labels, func(l string) bool { return !strings.Contains(line, l) }) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		n += v
	}
	return n
}

// Consoles' event streams need no sticky session either: stream tickets
// asked through the gateway (from either live process) open streams on
// either (the tickets are in Redis), streams end up open on both
// processes, and a ticket created through the API reaches every stream of
// its customer, whichever process holds it (each consumes the events).
func TestLiveStreamsOnBothReplicas(t *testing.T) {
	tn := e2ekit.NewTenant(t, stk, client(t), "Live")
	channelID, endUserID := webChannel(t, tn)
	ls := replicasOf(t, "live", 2)
	before := []float64{metricSum(t, ls[0].URL, "live_streams_open "), metricSum(t, ls[1].URL, "live_streams_open ")}
	c := client(t)
	// The tickets first, then the streams: the gateway's round robin
	// takes both in turn over the two processes (a ticket and its stream
	// in alternation would all land on one), so streams open on each and
	// some redeem a ticket the other process issued.
	tickets := make([]string, 12)
	for i := range tickets {
		var body struct {
			Ticket string `json:"ticket"`
		}
		e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/live/tickets", tn.AgentToken, nil), http.StatusCreated, &body)
		tickets[i] = body.Ticket
	}
	var streams []*e2ekit.LiveStream
	for _, ticket := range tickets {
		streams = append(streams, e2ekit.OpenLiveStream(t, stk, ticket, 0))
	}
	e2ekit.Eventually(t, 10*time.Second, "streams open on both live processes", func() bool {
		return metricSum(t, ls[0].URL, "live_streams_open ") > before[0] && metricSum(t, ls[1].URL, "live_streams_open ") > before[1]
	})
	var tk struct {
		TicketID int64 `json:"ticketID"`
	}
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/Tickets", tn.AgentToken,
		map[string]any{"subject": "Seen everywhere " + randid.Hex(3), "channelID": channelID, "endUserID": endUserID}), http.StatusCreated, &tk)
	for _, s := range streams {
		s.Until(10*time.Second, fmt.Sprintf("ticket.created of %d", tk.TicketID), e2ekit.TicketCreated(tk.TicketID))
	}
}

// A token from a login on one auth replica works on every replica of every
// service, and a logout on the other auth replica revokes it on all of them
// (revocations live in Redis); both auth replicas publish the same keys.
func TestLoginOnOneReplicaTokenEverywhere(t *testing.T) {
	tn := e2ekit.NewTenant(t, stk, client(t), "Logins")
	auths := replicasOf(t, "auth", 2)
	var tok e2ekit.Token
	e2ekit.WantStatus(t, direct(t, auths[1]).Do(http.MethodPost, "/api/Auth/login", "",
		map[string]string{"email": tn.AgentEmail, "password": tn.AgentPassword}), http.StatusOK, &tok)

	calls := map[string]string{"auth": "/api/Customers/me", "topics": "/api/Topics", "tickets": "/api/Tickets",
		"mailingest": "/api/Channels"}
	everywhere := func(want int) {
		t.Helper()
		for svc, path := range calls {
			for _, r := range replicasOf(t, svc, 2) {
				if got := direct(t, r).Do(http.MethodGet, path, tok.AccessToken, nil); got.Status != want {
					t.Errorf("%s GET %s: %d, want %d: %s", r.Name, path, got.Status, want, got)
				}
			}
		}
	}
	everywhere(http.StatusOK)

	// The signing keys: one set, served alike by both auth replicas.
	var sets []string
	for _, r := range auths {
		resp := direct(t, r).Do(http.MethodGet, "/api/Auth/jwks", "", nil)
		e2ekit.WantStatus(t, resp, http.StatusOK, nil)
		sets = append(sets, resp.String())
	}
	if sets[0] != sets[1] {
		t.Errorf("the auth replicas publish different keys:\n%s\n%s", sets[0], sets[1])
	}

	e2ekit.WantStatus(t, direct(t, auths[0]).Do(http.MethodPost, "/api/Auth/logout", tok.AccessToken, nil), http.StatusNoContent, nil)
	everywhere(http.StatusUnauthorized)
}

// An Idempotency-Key sent to one tickets replica and replayed on the other
// gets the first answer again (stored in Redis), and one ticket exists.
func TestIdempotencyKeyAcrossReplicas(t *testing.T) {
	tn := e2ekit.NewTenant(t, stk, client(t), "Idem")
	channelID, endUserID := webChannel(t, tn)
	subject := "Idempotent " + randid.Hex(4)
	body := map[string]any{"subject": subject, "channelID": channelID, "endUserID": endUserID}
	key := randid.Hex(12)
	ts := replicasOf(t, "tickets", 2)
	first := postWithKey(t, ts[0].URL, tn.AgentToken, key, body)
	if first.Status != http.StatusCreated {
		t.Fatalf("first: %d %s", first.Status, first)
	}
	again := postWithKey(t, ts[1].URL, tn.AgentToken, key, body)
	if again.Status != http.StatusCreated || again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("replayed on the other replica: %d replayed=%q\n%s\nfirst:\n%s", again.Status, again.Header.Get("Idempotent-Replayed"), again, first)
	}
	body["subject"] = subject + " changed"
	if other := postWithKey(t, ts[1].URL, tn.AgentToken, key, body); other.Status != http.StatusUnprocessableEntity {
		t.Errorf("the key with another body on the other replica: %d %s", other.Status, other)
	}
	var n int
	if err := backends.DB.QueryRow(t.Context(), `SELECT count(*) FROM tickets.tickets WHERE customer_id = $1 AND subject LIKE $2`,
		tn.CustomerID, subject+"%").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("%d tickets for one key", n)
	}
}

// The password-reset limit per address (AUTH_RESET_LIMIT, 5 per hour) is
// counted in Redis: requests alternating between the two auth replicas
// get 202 five times, then 429 on either replica.
func TestRateLimitSharedAcrossReplicas(t *testing.T) {
	auths := replicasOf(t, "auth", 2)
	email := "nobody-" + randid.Hex(5) + "@example.com"
	var got []int
	for i := range 7 {
		r := direct(t, auths[i%2]).Do(http.MethodPost, "/api/Auth/forgot-password", "", map[string]string{"email": email})
		got = append(got, r.Status)
	}
	want := []int{202, 202, 202, 202, 202, 429, 429}
	if !slices.Equal(got, want) {
		t.Errorf("statuses alternating between the replicas %v, want %v", got, want)
	}
}

// Both topics replicas relay the one outbox table (FOR UPDATE SKIP
// LOCKED): topics created through both, at once, reach EVENTS once each,
// with distinct event ids.
func TestOutboxRelaysPublishEachEventOnce(t *testing.T) {
	tn := e2ekit.NewTenant(t, stk, client(t), "Outbox")
	ts := replicasOf(t, "topics", 2)
	const n = 40
	run := randid.Hex(3)
	ids := make(chan int64, n)
	for i := range n {
		go func() {
			var tp struct {
				TopicID int64 `json:"topicID"`
			}
			// Sent whatever happens (a failed check ends this goroutine).
			defer func() { ids <- tp.TopicID }()
			r := direct(t, ts[i%2]).Do(http.MethodPost, "/api/Topics", tn.AdminToken,
				map[string]string{"name": fmt.Sprintf("Relay %s %d", run, i), "description": "relayed once"})
			if r.Status == http.StatusCreated {
				_ = json.Unmarshal(r.Body, &tp)
			}
		}()
	}
	want := map[int64]bool{}
	for range n {
		if id := <-ids; id > 0 {
			want[id] = true
		}
	}
	if len(want) != n {
		t.Fatalf("%d of %d topics created", len(want), n)
	}
	type topicEvent struct {
		TopicID int64 `json:"topicID"`
	}
	var seen map[int64]int
	e2ekit.Eventually(t, 30*time.Second, "every topic.created event", func() bool {
		seen = map[int64]int{}
		for _, ev := range e2ekit.Events(t, backends, contracts.EventTopicCreated, tn.CustomerID, func(topicEvent) bool { return true }) {
			seen[ev.TopicID]++
		}
		return len(seen) >= n
	})
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("topic %d: %d topic.created events", id, seen[id])
		}
	}
	ids2 := eventIDs(t, contracts.EventTopicCreated, tn.CustomerID)
	if len(ids2) != n || len(slices.Compact(slices.Sorted(slices.Values(ids2)))) != n {
		t.Errorf("%d topic.created messages on EVENTS with %d distinct event ids, want %d", len(ids2), len(slices.Compact(slices.Sorted(slices.Values(ids2)))), n)
	}
}

// eventIDs are the envelope ids of the customer's events of a type on
// EVENTS, one per stored message.
func eventIDs(t testing.TB, typ string, customerID int64) []string {
	t.Helper()
	var out []string
	for _, data := range backends.Messages(t, contracts.StreamEvents, contracts.EventSubject(typ)) {
		var ev contracts.Event[json.RawMessage]
		if json.Unmarshal(data, &ev) == nil && ev.CustomerID == customerID {
			out = append(out, ev.ID)
		}
	}
	return out
}

// webChannel makes a web channel and an end user of the tenant.
func webChannel(t testing.TB, tn e2ekit.Tenant) (channelID, endUserID int64) {
	t.Helper()
	c := client(t)
	var ch struct {
		ChannelID int64 `json:"channelID"`
	}
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/Channels", tn.AdminToken,
		map[string]any{"name": "Web " + randid.Hex(3), "kind": "web"}), http.StatusCreated, &ch)
	var u struct {
		EndUserID int64 `json:"endUserID"`
	}
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/EndUsers", tn.AgentToken,
		map[string]any{"name": "Ada " + randid.Hex(3)}), http.StatusCreated, &u)
	return ch.ChannelID, u.EndUserID
}

// postWithKey sends POST /api/Tickets with an Idempotency-Key to base (a
// replica's URL).
func postWithKey(t *testing.T, base, token, key string, body any) *e2ekit.Response {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/api/Tickets", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	return e2ekit.NewClient(t, base, &http.Client{Timeout: 30 * time.Second}, api).DoRequest(req)
}
