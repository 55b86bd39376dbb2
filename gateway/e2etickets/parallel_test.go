package e2etickets

import (
	"net/http"
	"testing"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/randid"
)

// One e-mail address per customer, also when ten requests race for it:
// one 201, the others 409, never a 500.
func TestEndUsersParallelSameEmail(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	email := "race-" + randid.Hex(4) + "@example.com"
	counts := e2ekit.Parallel(10, func() *e2ekit.Response {
		return client(t).Do(http.MethodPost, "/api/EndUsers", tn.AgentToken, map[string]any{"name": "Racer", "email": email})
	})
	if counts[http.StatusCreated] != 1 || counts[http.StatusConflict] != 9 {
		t.Fatalf("statuses %v, want one 201 and nine 409", counts)
	}
	if l := listEndUsers(t, tn.AgentToken, ""); l.TotalCount != 1 {
		t.Fatalf("%d end users", l.TotalCount)
	}
}

// Ten requests with one Idempotency-Key at once: one runs, the others are
// its replay or told it is still running; one end user exists.
func TestEndUsersParallelIdempotencyKey(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	key := "race-" + randid.Hex(8)
	body := map[string]any{"name": "Once"}
	counts := e2ekit.Parallel(10, func() *e2ekit.Response { return postWithKey(t, tn.AgentToken, key, body) })
	if counts[http.StatusCreated] < 1 || counts[http.StatusCreated]+counts[http.StatusConflict] != 10 {
		t.Fatalf("statuses %v, want 201s (the first and replays) and 409s (still running)", counts)
	}
	if l := listEndUsers(t, tn.AgentToken, ""); l.TotalCount != 1 {
		t.Fatalf("%d end users for one key", l.TotalCount)
	}
}
