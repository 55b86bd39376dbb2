package e2elive

import (
	"bufio"
	"fmt"
	"net/http"
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

// open opens a stream with a new ticket, resuming after lastID when it is
// not 0.
func (tn tenant) open(t *testing.T, lastID uint64) *e2ekit.LiveStream {
	t.Helper()
	return e2ekit.OpenLiveStream(t, stk, tn.streamTicket(t), lastID)
}

func TestEventReachesOnlyItsCustomerWithinASecond(t *testing.T) {
	a, b := newTenant(t, "LiveA"), newTenant(t, "LiveB")
	a1, a2, bs := a.open(t, 0), a.open(t, 0), b.open(t, 0)

	start := time.Now()
	id := a.createTicket(t, "Printer on fire")
	for _, s := range []*e2ekit.LiveStream{a1, a2} {
		e, _ := s.Until(time.Second, fmt.Sprintf("ticket.created of %d", id), e2ekit.TicketCreated(id))
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
	_, before := bs.Until(time.Second, "B's own ticket.created", e2ekit.TicketCreated(own))
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
	got, _ := s.Until(time.Second, "the first ticket.created", e2ekit.TicketCreated(first))
	s.Close()

	missed := []int64{a.createTicket(t, "Missed 1"), a.createTicket(t, "Missed 2")}
	r := a.open(t, got.ID)
	last := got.ID
	for _, id := range missed {
		e, _ := r.Until(2*time.Second, fmt.Sprintf("missed ticket.created of %d", id), e2ekit.TicketCreated(id))
		if e.ID <= last {
			t.Fatalf("event %d after %d: out of order", e.ID, last)
		}
		last = e.ID
	}
	live := a.createTicket(t, "Live")
	r.Until(time.Second, "the live ticket.created", e2ekit.TicketCreated(live))
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
