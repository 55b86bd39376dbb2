package e2etickets

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/pkg/contracts"
)

// end-user.created, .updated and .deleted reach EVENTS through the outbox
// relay, for this customer and end user only.
func TestEndUserEvents(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	c := client(t)
	u := createEndUser(t, tn.AgentToken, map[string]any{"name": "Evented", "email": "evented@example.com", "language": "de"})
	path := fmt.Sprintf("/api/EndUsers/%d", u.EndUserID)
	wantStatus(t, c.Do(http.MethodPut, path, tn.AgentToken, map[string]any{"name": "Evented again"}), http.StatusNoContent, nil)
	wantStatus(t, c.Do(http.MethodDelete, path, tn.AgentToken, nil), http.StatusNoContent, nil)

	want := []string{contracts.EventEndUserCreated, contracts.EventEndUserUpdated, contracts.EventEndUserDeleted}
	var seen []contracts.Event[contracts.EndUserChanged]
	deadline := time.Now().Add(10 * time.Second)
	for {
		seen = nil
		for _, typ := range want {
			for _, data := range backends.Messages(t, contracts.StreamEvents, contracts.EventSubject(typ)) {
				var ev contracts.Event[contracts.EndUserChanged]
				if json.Unmarshal(data, &ev) == nil && ev.CustomerID == tn.CustomerID && ev.Data.EndUserID == u.EndUserID {
					seen = append(seen, ev)
				}
			}
		}
		if len(seen) == len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events after 10 s: %+v", seen)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i, ev := range seen {
		if ev.Type != want[i] {
			t.Fatalf("events %+v", seen)
		}
	}
	if d := seen[0].Data; d.Name != "Evented" || d.Email != "evented@example.com" || d.Language != "de" {
		t.Fatalf("created event %+v", d)
	}
	if d := seen[2].Data; d.Name != "Evented again" || d.Email != "" {
		t.Fatalf("deleted event %+v", d)
	}
}

// Paths under the service's prefixes that it does not serve yet (the
// Tickets and TicketMessages APIs come next) answer a 404 problem.
func TestUnservedPathsUnderThePrefixes(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	for _, p := range []string{"/api/Tickets/1/nothing", "/api/TicketMessages/1/attachments/1/more", "/api/EndUsers/1/nothing"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, stk.HTTPSURL+p, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tn.AgentToken)
		resp, err := stk.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
			t.Fatalf("%s: %d %q %s", p, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if err := api.ValidateProblem(resp.StatusCode, resp.Header, body); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
}
