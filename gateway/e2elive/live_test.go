package e2elive

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/randid"
)

func client(t testing.TB) *e2ekit.Client {
	return e2ekit.NewClient(t, stk.HTTPSURL, stk.HTTPClient(), api)
}

// tenant is a customer of the test's own with a web channel and an end
// user, so that it can create tickets.
type tenant struct {
	e2ekit.Tenant
	channelID, endUserID int64
}

func newTenant(t *testing.T, label string) tenant {
	t.Helper()
	c := client(t)
	tn := tenant{Tenant: e2ekit.NewTenant(t, stk, c, label)}
	var ch struct {
		ChannelID int64 `json:"channelID"`
	}
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/Channels", tn.AdminToken,
		map[string]any{"name": "Web " + randid.Hex(3), "kind": "web"}), http.StatusCreated, &ch)
	var eu struct {
		EndUserID int64 `json:"endUserID"`
	}
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/EndUsers", tn.AgentToken,
		map[string]any{"name": "Ada " + randid.Hex(3), "email": "ada-" + randid.Hex(3) + "@example.org"}), http.StatusCreated, &eu)
	tn.channelID, tn.endUserID = ch.ChannelID, eu.EndUserID
	return tn
}

// createTicket makes a ticket through the API and returns its id.
func (tn tenant) createTicket(t *testing.T, subject string) int64 {
	t.Helper()
	var tk struct {
		TicketID int64 `json:"ticketID"`
	}
	e2ekit.WantStatus(t, client(t).Do(http.MethodPost, "/api/Tickets", tn.AgentToken,
		map[string]any{"subject": subject, "channelID": tn.channelID, "endUserID": tn.endUserID}), http.StatusCreated, &tk)
	return tk.TicketID
}

// streamTicket asks for a stream ticket as the tenant's agent.
func (tn tenant) streamTicket(t *testing.T) string {
	t.Helper()
	var body struct {
		Ticket string `json:"ticket"`
	}
	e2ekit.WantStatus(t, client(t).Do(http.MethodPost, "/api/live/tickets", tn.AgentToken, nil), http.StatusCreated, &body)
	return body.Ticket
}

type event struct {
	ID   uint64
	Type string
	Data map[string]any
	At   time.Time
}

// stream is an event stream open through the gateway, read as an
// EventSource would.
type stream struct {
	t      *testing.T
	events chan event
	close  func()
}

// open opens a stream with a new ticket, resuming after lastID when it is
// not 0.
func (tn tenant) open(t *testing.T, lastID uint64) *stream {
	t.Helper()
	query := "?ticket=" + tn.streamTicket(t)
	if lastID > 0 {
		query += "&lastEventId=" + strconv.FormatUint(lastID, 10)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, stk.HTTPSURL+"/api/live/events"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := stk.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body.Close()
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" {
		t.Fatalf("the gateway encoded the stream: %s", ce)
	}
	s := &stream{t: t, events: make(chan event, 256), close: func() { resp.Body.Close() }}
	t.Cleanup(s.close)
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		var e event
		var data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e.Type != "" {
					e.At = time.Now()
					_ = json.Unmarshal([]byte(data), &e.Data)
					s.events <- e
				}
				e, data = event{}, ""
			case strings.HasPrefix(line, "id: "):
				e.ID, _ = strconv.ParseUint(line[4:], 10, 64)
			case strings.HasPrefix(line, "event: "):
				e.Type = line[7:]
			case strings.HasPrefix(line, "data: "):
				data = line[6:]
			}
		}
	}()
	return s
}

// until returns the first event for which match is true, failing after
// limit; the events before it are returned too.
func (s *stream) until(limit time.Duration, what string, match func(event) bool) (event, []event) {
	s.t.Helper()
	deadline := time.After(limit)
	var before []event
	for {
		select {
		case e, ok := <-s.events:
			if !ok {
				s.t.Fatalf("the stream ended before %s", what)
			}
			if match(e) {
				return e, before
			}
			before = append(before, e)
		case <-deadline:
			s.t.Fatalf("no %s within %v (got %+v)", what, limit, before)
		}
	}
}

func ticketCreated(id int64) func(event) bool {
	return func(e event) bool { return e.Type == "ticket.created" && e.Data["ticketID"] == float64(id) }
}

// A ticket created through the API reaches every open console of its
// customer within a second, through the gateway, and never another
// customer's.
func TestEventReachesOnlyItsCustomerWithinASecond(t *testing.T) {
	a, b := newTenant(t, "LiveA"), newTenant(t, "LiveB")
	a1, a2, bs := a.open(t, 0), a.open(t, 0), b.open(t, 0)

	start := time.Now()
	id := a.createTicket(t, "Printer on fire")
	for _, s := range []*stream{a1, a2} {
		e, _ := s.until(time.Second, fmt.Sprintf("ticket.created of %d", id), ticketCreated(id))
		if d := e.At.Sub(start); d > time.Second {
			t.Errorf("the event took %v", d)
		}
		if e.ID == 0 || e.Data["status"] == nil {
			t.Errorf("event %+v", e)
		}
		for _, k := range []string{"subject", "email", "text"} {
			if _, ok := e.Data[k]; ok {
				t.Errorf("%s forwarded: %v", k, e.Data)
			}
		}
	}
	// B's own ticket comes, and nothing of A's before it.
	own := b.createTicket(t, "Own")
	_, before := bs.until(time.Second, "B's own ticket.created", ticketCreated(own))
	for _, e := range before {
		if e.Data["ticketID"] == float64(id) {
			t.Fatalf("customer B received customer A's event %+v", e)
		}
	}
}

// A console that reconnects with the last id it received gets the events
// it missed, in order, then the live ones.
func TestReconnectGetsWhatWasMissed(t *testing.T) {
	a := newTenant(t, "LiveR")
	s := a.open(t, 0)
	first := a.createTicket(t, "First")
	got, _ := s.until(time.Second, "the first ticket.created", ticketCreated(first))
	s.close()

	missed := []int64{a.createTicket(t, "Missed 1"), a.createTicket(t, "Missed 2")}
	r := a.open(t, got.ID)
	last := got.ID
	for _, id := range missed {
		e, _ := r.until(2*time.Second, fmt.Sprintf("missed ticket.created of %d", id), ticketCreated(id))
		if e.ID <= last {
			t.Fatalf("event %d after %d: out of order", e.ID, last)
		}
		last = e.ID
	}
	live := a.createTicket(t, "Live")
	r.until(time.Second, "the live ticket.created", ticketCreated(live))
}

// A stream ticket opens one stream; the second use, a made-up ticket and no
// credentials at all are 401 problems.
func TestStreamTicketWorksOnce(t *testing.T) {
	a := newTenant(t, "LiveT")
	c := client(t)
	ticket := a.streamTicket(t)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, stk.HTTPSURL+"/api/live/events?ticket="+ticket, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := stk.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || err != nil || !strings.HasPrefix(line, "retry:") {
		t.Fatalf("first use: %d %q %v", resp.StatusCode, line, err)
	}
	for name, path := range map[string]string{
		"second use": "/api/live/events?ticket=" + ticket,
		"made up":    "/api/live/events?ticket=" + strings.Repeat("A", 43),
		"nothing":    "/api/live/events",
	} {
		r := c.Do(http.MethodGet, path, "", nil)
		if r.Status != http.StatusUnauthorized {
			t.Errorf("%s: %d %s", name, r.Status, r.String())
		}
	}
	e2ekit.WantStatus(t, c.Do(http.MethodPost, "/api/live/tickets", "", nil), http.StatusUnauthorized, nil)
	// A bad resume point is a 400 problem.
	e2ekit.WantStatus(t, c.Do(http.MethodGet, "/api/live/events?lastEventId=abc", a.AgentToken, nil), http.StatusBadRequest, nil)
}
