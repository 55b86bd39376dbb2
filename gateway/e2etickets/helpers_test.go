package e2etickets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"supportplatform.dev/gateway/e2e"
	"supportplatform.dev/pkg/randid"
)

// Every test works in tenants of its own, so lists hold only what the test
// made and tests may run in parallel.

type tenant struct {
	adminToken string
	agentToken string
	customerID int64
}

// newTenant bootstraps a customer with an admin and adds an agent account.
func newTenant(t *testing.T) tenant {
	t.Helper()
	name := "Tickets " + randid.Hex(4)
	email := "admin-" + randid.Hex(4) + "@tickets" + strings.ToLower(randid.Hex(3)) + ".test"
	password := "pw-" + randid.Hex(10)
	out, err := stk.Command(t.Context(), "auth", "bootstrap", "-customer", name, "-email", email, "-password", password).CombinedOutput()
	if err != nil {
		t.Fatalf("bootstrap %s: %v %s", name, err, out)
	}
	c := client(t)
	tn := tenant{adminToken: c.Login(email, password)}
	var me struct {
		Customer struct {
			CustomerID int64 `json:"customerID"`
		} `json:"customer"`
	}
	wantStatus(t, c.Do(http.MethodGet, "/api/Customers/me", tn.adminToken, nil), http.StatusOK, &me)
	tn.customerID = me.Customer.CustomerID
	agentEmail, agentPassword := "agent-"+randid.Hex(4)+"@"+strings.Split(email, "@")[1], "pw-"+randid.Hex(10)
	r := c.Do(http.MethodPost, "/api/Accounts", tn.adminToken, map[string]string{"email": agentEmail, "password": agentPassword, "name": "Agent", "role": "agent"})
	wantStatus(t, r, http.StatusCreated, nil)
	tn.agentToken = c.Login(agentEmail, agentPassword)
	return tn
}

func client(t testing.TB) *e2e.Client { return e2e.NewClient(t, stk.HTTPSURL, stk.HTTPClient(), api) }

// wantStatus fails t unless r has status want; a 2xx body is decoded into v
// when v is not nil; a problem status must carry a problem body.
func wantStatus(t testing.TB, r *e2e.Response, want int, v any) {
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

// wantProblem requires status want and a problem naming field (when not "").
func wantProblem(t testing.TB, r *e2e.Response, want int, field string) {
	t.Helper()
	wantStatus(t, r, want, nil)
	if p := r.Problem(t); field != "" && p.Errors[field] == "" {
		t.Fatalf("%d problem without errors.%s: %s", want, field, r.String())
	}
}

type endUserBody struct {
	EndUserID        int64           `json:"endUserID"`
	CustomerID       int64           `json:"customerID"`
	Name             string          `json:"name"`
	Email            *string         `json:"email"`
	Phone            *string         `json:"phone"`
	Language         *string         `json:"language"`
	CustomFieldsData json.RawMessage `json:"customFieldsData"`
	DateCreated      string          `json:"dateCreated"`
	DateUpdated      string          `json:"dateUpdated"`
}

type listBody[T any] struct {
	Items      []T `json:"items"`
	TotalCount int `json:"totalCount"`
	TotalPages int `json:"totalPages"`
}

// createEndUser makes an end user and checks its Location.
func createEndUser(t *testing.T, token string, body any) endUserBody {
	t.Helper()
	r := client(t).Do(http.MethodPost, "/api/EndUsers", token, body)
	var u endUserBody
	wantStatus(t, r, http.StatusCreated, &u)
	if r.Header.Get("Location") != fmt.Sprintf("/api/EndUsers/%d", u.EndUserID) {
		t.Fatalf("Location %q for %d", r.Header.Get("Location"), u.EndUserID)
	}
	return u
}

// postWithKey sends POST /api/EndUsers with an Idempotency-Key.
func postWithKey(t *testing.T, token, key string, body any) *e2e.Response {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, stk.HTTPSURL+"/api/EndUsers", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	return client(t).DoRequest(req)
}

func listEndUsers(t *testing.T, token, query string) listBody[endUserBody] {
	t.Helper()
	var l listBody[endUserBody]
	wantStatus(t, client(t).Do(http.MethodGet, "/api/EndUsers"+query, token, nil), http.StatusOK, &l)
	return l
}

// exec runs SQL as the database administrator.
func exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := adminDB.Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func str(s string) *string { return &s }
