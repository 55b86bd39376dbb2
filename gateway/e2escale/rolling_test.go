package e2escale

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/graphfake"
	"supportplatform.dev/pkg/randid"
)

// load sends the mixed load through the gateway and counts what came
// back: any status other than the expected one, a transport error or an
// answer that breaks the contract is a failure.
type load struct {
	t      *testing.T
	http   *http.Client
	mu     sync.Mutex
	counts map[string]int // requests by kind
	fails  []string
	total  atomic.Int64
	// tickets are the subjects of the tickets created through the API, by
	// id; mails the subjects of the mails delivered.
	tickets map[int64]string
	topics  []int64
	mails   []string
}

func (l *load) do(kind, method, path, token string, body any, header map[string]string, want int, out any) bool {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			panic(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, stk.HTTPSURL+path, rd)
	if err != nil {
		panic(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	l.total.Add(1)
	start := time.Now()
	resp, err := l.http.Do(req)
	var data []byte
	if err == nil {
		data, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[kind]++
	fail := func(format string, args ...any) bool {
		l.fails = append(l.fails, fmt.Sprintf("%s %s %s (after %s): ", time.Now().Format("15:04:05.000"), method, path,
			time.Since(start).Round(time.Millisecond))+fmt.Sprintf(format, args...))
		return false
	}
	switch {
	case err != nil:
		return fail("%v", err)
	case resp.StatusCode != want:
		return fail("%d, want %d: %s", resp.StatusCode, want, e2ekit.Truncate(data))
	}
	// The API's answers match the contract (the page and the console are
	// outside it).
	if strings.HasPrefix(path, "/api/") {
		if err := api.ValidateResponse(req, resp.StatusCode, resp.Header, data); err != nil {
			return fail("contract: %v", err)
		}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fail("decode: %v", err)
		}
	}
	return true
}

// A rolling restart under load: while a mixed load of the main routes runs
// through the gateway (logins, ticket lists and creations with an
// Idempotency-Key, messages, topics, translations, the reference page and
// the console, mail notifications from the fake Graph), one replica of
// every service after another gets SIGTERM and is started again on its
// port. No request fails, every created ticket's and topic's event is on
// EVENTS once, and no ticket exists twice (neither a created one nor a
// mail's).
func TestRollingRestartUnderLoad(t *testing.T) {
	c := client(t)
	tn := e2ekit.NewTenant(t, stk, c, "Rolling")
	channelID, endUserID := webChannel(t, tn)
	mailCh, folder := e2ekit.SubscribedFolder(t, c, graph, tn)
	l := &load{t: t, http: stk.HTTPClient(), counts: map[string]int{}, tickets: map[int64]string{}}
	l.http.Timeout = 60 * time.Second
	run := randid.Hex(3)

	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var wg sync.WaitGroup
	worker := func(fn func(i int)) {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				fn(i)
			}
		})
	}
	// Tickets: created with a key, listed; a message into each.
	for w := range 2 {
		worker(func(i int) {
			subject := fmt.Sprintf("Rolling %s %d-%d", run, w, i)
			var tk struct {
				TicketID int64 `json:"ticketID"`
			}
			if l.do("ticket create", http.MethodPost, "/api/Tickets", tn.AgentToken,
				map[string]any{"subject": subject, "channelID": channelID, "endUserID": endUserID},
				map[string]string{"Idempotency-Key": randid.Hex(12)}, http.StatusCreated, &tk) {
				l.mu.Lock()
				l.tickets[tk.TicketID] = subject
				l.mu.Unlock()
				sender := "Agent"
				if i%4 == 0 {
					sender = "EndUser" // the assistant prepares a reply
				}
				l.do("message create", http.MethodPost, "/api/TicketMessages", tn.AgentToken,
					map[string]any{"ticketID": tk.TicketID, "message": "Still waiting for " + subject, "senderType": sender}, nil, http.StatusCreated, nil)
			}
			l.do("ticket list", http.MethodGet, "/api/Tickets?pageSize=5", tn.AgentToken, nil, nil, http.StatusOK, nil)
		})
	}
	// Topics, translations, the reference page and the console.
	worker(func(i int) {
		var tp struct {
			TopicID int64 `json:"topicID"`
		}
		if l.do("topic create", http.MethodPost, "/api/Topics", tn.AdminToken,
			map[string]string{"name": fmt.Sprintf("Rolling %s %d", run, i), "description": "made during a rolling restart"}, nil, http.StatusCreated, &tp) {
			l.mu.Lock()
			l.topics = append(l.topics, tp.TopicID)
			l.mu.Unlock()
		}
		l.do("topic list", http.MethodGet, "/api/Topics?pageSize=5", tn.AgentToken, nil, nil, http.StatusOK, nil)
		if i%3 == 0 {
			l.do("translation", http.MethodPost, "/api/Translations/translate", tn.AgentToken,
				map[string]string{"sourceText": "Thank you for your message", "sourceLang": "en", "targetLang": "es"}, nil, http.StatusOK, nil)
		}
		l.do("docs", http.MethodGet, "/docs/", "", nil, nil, http.StatusOK, nil)
		l.do("console", http.MethodGet, "/", "", nil, nil, http.StatusOK, nil)
	})
	// Logins, and the new token used at once.
	worker(func(int) {
		var tok e2ekit.Token
		if l.do("login", http.MethodPost, "/api/Auth/login", "", map[string]string{"email": tn.AgentEmail, "password": tn.AgentPassword},
			nil, http.StatusOK, &tok) {
			l.do("me", http.MethodGet, "/api/Customers/me", tok.AccessToken, nil, nil, http.StatusOK, nil)
		}
		time.Sleep(50 * time.Millisecond)
	})
	// Mail: delivered in the fake Graph, notified through the gateway (the
	// provider's callback route), imported by the import workers.
	worker(func(i int) {
		subject := fmt.Sprintf("Mail %s %d", run, i)
		if _, err := graph.AddMail(graphfake.DeliverMail{Mailbox: *mailCh.EmailAddress, Subject: subject,
			From: graphfake.Address{Address: fmt.Sprintf("writer-%d@customer.example", i)}, Text: "mail " + subject}); err != nil {
			t.Errorf("add mail: %v", err)
			return
		}
		l.mu.Lock()
		l.mails = append(l.mails, subject)
		l.counts["notification"]++
		l.mu.Unlock()
		l.total.Add(1)
		// Not cut short when the load stops: its mail must become a ticket.
		status, err := graph.Notify(t.Context(), *folder.ProviderSubscriptionID, 1)
		if err != nil || status/100 != 2 {
			l.mu.Lock()
			l.fails = append(l.fails, fmt.Sprintf("%s notification of %s: %d %v", time.Now().Format("15:04:05.000"), subject, status, err))
			l.mu.Unlock()
		}
		time.Sleep(100 * time.Millisecond)
	})

	// The load is under way before the first restart.
	e2ekit.Eventually(t, 30*time.Second, "the load under way", func() bool { return l.total.Load() >= 50 })
	start := time.Now()
	var restarts []string
	for _, svc := range stk.Services {
		r := stk.Replicas(svc)[0]
		began := time.Now()
		if err := r.Restart(t.Context()); err != nil {
			stop()
			wg.Wait()
			t.Fatalf("restart %s: %v", r.Name, err)
		}
		restarts = append(restarts, fmt.Sprintf("%s %s", r.Name, time.Since(began).Round(10*time.Millisecond)))
	}
	restarted := time.Since(start)
	time.Sleep(time.Second) // the load goes on a moment after the last restart
	stop()
	wg.Wait()
	ran := time.Since(start)

	l.mu.Lock()
	defer l.mu.Unlock()
	kinds := make([]string, 0, len(l.counts))
	for k := range l.counts {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, l.counts[k]))
	}
	sort.Strings(kinds)
	t.Logf("rolling restart of %d services in %s (%s); load for %s: %d requests (%s), %d failed",
		len(restarts), restarted.Round(10*time.Millisecond), strings.Join(restarts, ", "), ran.Round(10*time.Millisecond),
		l.total.Load(), strings.Join(kinds, ", "), len(l.fails))
	for i, f := range l.fails {
		if i == 20 {
			t.Errorf("... and %d more failures", len(l.fails)-20)
			break
		}
		t.Errorf("failed: %s", f)
	}
	if len(l.tickets) == 0 || len(l.topics) == 0 || len(l.mails) == 0 {
		t.Fatalf("the load made %d tickets, %d topics, %d mails", len(l.tickets), len(l.topics), len(l.mails))
	}

	// No lost event: each created ticket and topic has its event, once.
	type ticketEvent struct {
		TicketID int64 `json:"ticketID"`
	}
	type topicEvent struct {
		TopicID int64 `json:"topicID"`
	}
	var ticketEvents, topicEvents map[int64]int
	deadline := time.Now().Add(30 * time.Second)
	for {
		ticketEvents, topicEvents = map[int64]int{}, map[int64]int{}
		for _, ev := range e2ekit.Events(t, backends, contracts.EventTicketCreated, tn.CustomerID, func(ticketEvent) bool { return true }) {
			ticketEvents[ev.TicketID]++
		}
		for _, ev := range e2ekit.Events(t, backends, contracts.EventTopicCreated, tn.CustomerID, func(topicEvent) bool { return true }) {
			topicEvents[ev.TopicID]++
		}
		missing := 0
		for id := range l.tickets {
			if ticketEvents[id] == 0 {
				missing++
			}
		}
		for _, id := range l.topics {
			if topicEvents[id] == 0 {
				missing++
			}
		}
		if missing == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	lost, doubled := 0, 0
	for id := range l.tickets {
		switch ticketEvents[id] {
		case 0:
			lost++
			t.Errorf("ticket %d: no ticket.created event", id)
		case 1:
		default:
			doubled++
			t.Errorf("ticket %d: %d ticket.created events", id, ticketEvents[id])
		}
	}
	for _, id := range l.topics {
		switch topicEvents[id] {
		case 0:
			lost++
			t.Errorf("topic %d: no topic.created event", id)
		case 1:
		default:
			doubled++
			t.Errorf("topic %d: %d topic.created events", id, topicEvents[id])
		}
	}

	// No duplicate ticket: one per created subject and one per mail, and
	// no other.
	subjects := map[string]int{}
	e2ekit.Eventually(t, 90*time.Second, fmt.Sprintf("a ticket for each of the %d mails", len(l.mails)), func() bool {
		subjects = map[string]int{}
		rows, err := backends.DB.Query(t.Context(), `SELECT subject, count(*) FROM tickets.tickets WHERE customer_id = $1 GROUP BY subject`, tn.CustomerID)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			var n int
			if err := rows.Scan(&s, &n); err != nil {
				t.Fatal(err)
			}
			subjects[s] = n
		}
		for _, m := range l.mails {
			if subjects[m] == 0 {
				return false
			}
		}
		return true
	})
	duplicates := 0
	for s, n := range subjects {
		if n > 1 {
			duplicates++
			t.Errorf("%d tickets with the subject %q", n, s)
		}
	}
	if got, want := len(subjects), len(l.tickets)+len(l.mails); got != want {
		t.Errorf("%d distinct ticket subjects, want %d (%d created, %d mails)", got, want, len(l.tickets), len(l.mails))
	}
	t.Logf("figures: %d requests, %d failed; %d tickets created through the API and %d from mails, %d duplicate tickets; %d ticket.created and %d topic.created events checked, %d lost, %d doubled",
		l.total.Load(), len(l.fails), len(l.tickets), len(l.mails), duplicates, len(l.tickets), len(l.topics), lost, doubled)
}
