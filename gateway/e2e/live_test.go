package e2e

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
)

// The live service's two routes through the gateway (its behaviour is
// gateway/e2elive's): a stream ticket, and a stream it opens whose first
// line arrives unbuffered.
func TestLiveRoutes(t *testing.T) {
	c := client(t)
	tok := c.Login(demo.Email, demo.Password)
	var body struct {
		Ticket string `json:"ticket"`
	}
	r := c.Do(http.MethodPost, "/API/LIVE/tickets", tok, nil)
	if r.Status != http.StatusCreated {
		t.Fatalf("ticket: %d %s", r.Status, r.String())
	}
	r.JSON(t, &body)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, stk.HTTPSURL+"/api/live/events?ticket="+body.Ticket, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := stk.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if resp.StatusCode != http.StatusOK || err != nil || !strings.HasPrefix(line, "retry:") {
		t.Fatalf("stream: %d %q %v", resp.StatusCode, line, err)
	}
	if r := c.Do(http.MethodGet, "/api/live/events", "", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("stream without credentials: %d", r.Status)
	}
}
