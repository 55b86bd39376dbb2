package e2etickets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/randid"
)

// Every test works in tenants of its own, so lists hold only what the test
// made and tests may run in parallel.

// tenant is a customer of the test's own (e2ekit.Tenant).
type tenant = e2ekit.Tenant

func newTenant(t *testing.T) tenant {
	t.Helper()
	return e2ekit.NewTenant(t, stk, client(t), "Tickets")
}

func client(t testing.TB) *e2ekit.Client {
	return e2ekit.NewClient(t, stk.HTTPSURL, stk.HTTPClient(), api)
}

// wantStatus is e2ekit.WantStatus.
func wantStatus(t testing.TB, r *e2ekit.Response, want int, v any) {
	t.Helper()
	e2ekit.WantStatus(t, r, want, v)
}

// wantProblem requires status want and a problem naming field (when not "").
func wantProblem(t testing.TB, r *e2ekit.Response, want int, field string) {
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

type listBody[T any] = e2ekit.List[T]

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
func postWithKey(t *testing.T, token, key string, body any) *e2ekit.Response {
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
func exec(t *testing.T, sql string, args ...any) { t.Helper(); backends.Exec(t, sql, args...) }

// createChannel makes a live web channel of the tenant (as its admin) and
// returns its id.
func createChannel(t *testing.T, tn tenant) int64 {
	t.Helper()
	var ch struct {
		ChannelID int64 `json:"channelID"`
	}
	wantStatus(t, client(t).Do(http.MethodPost, "/api/Channels", tn.AdminToken,
		map[string]any{"name": "Web " + randid.Hex(3), "kind": "web"}), http.StatusCreated, &ch)
	return ch.ChannelID
}

// deleteChannel soft-deletes a channel.
func deleteChannel(t *testing.T, tn tenant, id int64) {
	t.Helper()
	wantStatus(t, client(t).Do(http.MethodDelete, fmt.Sprintf("/api/Channels/%d", id), tn.AdminToken, nil), http.StatusNoContent, nil)
}

// createTopic makes a topic of the tenant (as its admin) and returns its id.
func createTopic(t *testing.T, tn tenant, name string) int64 {
	t.Helper()
	var tp struct {
		TopicID int64 `json:"topicID"`
	}
	wantStatus(t, client(t).Do(http.MethodPost, "/api/Topics", tn.AdminToken,
		map[string]any{"name": name, "description": "About " + name}), http.StatusCreated, &tp)
	return tp.TopicID
}

// accountID is the id of the account behind a token.
func accountID(t *testing.T, token string) int64 {
	t.Helper()
	var me struct {
		Account struct {
			AccountID int64 `json:"accountID"`
		} `json:"account"`
	}
	wantStatus(t, client(t).Do(http.MethodGet, "/api/Customers/me", token, nil), http.StatusOK, &me)
	return me.Account.AccountID
}
