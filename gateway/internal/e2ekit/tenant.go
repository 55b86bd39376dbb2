package e2ekit

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/pkg/randid"
)

// Tenant is a customer of a test's own (lists hold only what the test
// made, so tests may run in parallel), with an admin and an agent.
type Tenant struct {
	AdminToken string
	AgentToken string
	CustomerID int64
	// AgentEmail and AgentPassword sign the agent in elsewhere (a browser);
	// AdminEmail and AdminPassword the admin.
	AgentEmail, AgentPassword string
	AdminEmail, AdminPassword string
}

// NewTenant bootstraps a customer named after label with an admin (`auth
// bootstrap` on stk) and adds an agent account through the API.
func NewTenant(t *testing.T, stk *stack.Stack, c *Client, label string) Tenant {
	t.Helper()
	name := label + " " + randid.Hex(4)
	domain := strings.ToLower(label) + randid.Hex(3) + ".test"
	email, password := "admin-"+randid.Hex(4)+"@"+domain, "pw-"+randid.Hex(10)
	out, err := stk.Command(t.Context(), "auth", "bootstrap", "-customer", name, "-email", email, "-password", password).CombinedOutput()
	if err != nil {
		t.Fatalf("bootstrap %s: %v %s", name, err, out)
	}
	tn := Tenant{AdminToken: c.Login(email, password), AdminEmail: email, AdminPassword: password}
	var me struct {
		Customer struct {
			CustomerID int64 `json:"customerID"`
		} `json:"customer"`
	}
	WantStatus(t, c.Do(http.MethodGet, "/api/Customers/me", tn.AdminToken, nil), http.StatusOK, &me)
	tn.CustomerID = me.Customer.CustomerID
	agentEmail, agentPassword := "agent-"+randid.Hex(4)+"@"+domain, "pw-"+randid.Hex(10)
	WantStatus(t, c.Do(http.MethodPost, "/api/Accounts", tn.AdminToken,
		map[string]string{"email": agentEmail, "password": agentPassword, "name": "Agent", "role": "agent"}), http.StatusCreated, nil)
	tn.AgentToken = c.Login(agentEmail, agentPassword)
	tn.AgentEmail, tn.AgentPassword = agentEmail, agentPassword
	return tn
}

// WantStatus fails t unless r has status want; a 2xx body is decoded into v
// when v is not nil; an error status must carry a problem body.
func WantStatus(t testing.TB, r *Response, want int, v any) {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d: %s", r.Status, want, r.String())
	}
	if v != nil {
		r.JSON(t, v)
	}
	if want >= 400 {
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
			t.Fatalf("%d with Content-Type %q", want, ct)
		}
	}
}

// List is the envelope of every list.
type List[T any] struct {
	Items      []T `json:"items"`
	TotalCount int `json:"totalCount"`
	TotalPages int `json:"totalPages"`
}

// Parallel sends n copies of a request at once and counts the statuses
// (the limits, uniqueness and exactly-once rules are tested under races).
func Parallel(n int, send func() *Response) map[int]int {
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			r := send()
			mu.Lock()
			counts[r.Status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return counts
}
