package e2etickets

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"supportplatform.dev/pkg/randid"
)

func TestEndUsersCreateReadUpdateDelete(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	c := client(t)
	u := createEndUser(t, tn.AdminToken, map[string]any{"name": "  Ada Lovelace ", "email": " Ada@Example.COM ", "phone": "+44 (0)20 7946-0000",
		"language": "ENG", "customFieldsData": map[string]any{"plan": "gold", "seats": 3, "tags": []string{"vip"}}})
	if u.CustomerID != tn.CustomerID || u.Name != "Ada Lovelace" || u.Email == nil || *u.Email != "ada@example.com" ||
		u.Phone == nil || *u.Phone != "+44 (0)20 7946-0000" || u.Language == nil || *u.Language != "en" || u.DateCreated == "" ||
		u.DateCreated != u.DateUpdated {
		t.Fatalf("created %+v", u)
	}
	var fields map[string]any
	if err := json.Unmarshal(u.CustomFieldsData, &fields); err != nil || fields["plan"] != "gold" || fields["seats"] != 3.0 {
		t.Fatalf("customFieldsData %s", u.CustomFieldsData)
	}
	var got endUserBody
	path := fmt.Sprintf("/api/EndUsers/%d", u.EndUserID)
	wantStatus(t, c.Do(http.MethodGet, strings.ToLower(path), tn.AgentToken, nil), http.StatusOK, &got)
	if !reflect.DeepEqual(got, u) {
		t.Fatalf("get %+v, created %+v", got, u)
	}
	if l := listEndUsers(t, tn.AgentToken, ""); l.TotalCount != 1 || l.TotalPages != 1 || l.Items[0].EndUserID != u.EndUserID {
		t.Fatalf("list %+v", l)
	}

	// PUT replaces: absent optional fields become null.
	wantStatus(t, c.Do(http.MethodPut, path, tn.AdminToken, map[string]any{"name": "Ada King"}), http.StatusNoContent, nil)
	wantStatus(t, c.Do(http.MethodGet, path, tn.AdminToken, nil), http.StatusOK, &got)
	if got.Name != "Ada King" || got.Email != nil || got.Phone != nil || got.Language != nil || string(got.CustomFieldsData) != "{}" ||
		got.DateCreated != u.DateCreated || got.DateUpdated == u.DateUpdated {
		t.Fatalf("after PUT %+v", got)
	}
	wantStatus(t, c.Do(http.MethodDelete, path, tn.AdminToken, nil), http.StatusNoContent, nil)
	wantProblem(t, c.Do(http.MethodGet, path, tn.AdminToken, nil), http.StatusNotFound, "")
	wantProblem(t, c.Do(http.MethodPut, path, tn.AdminToken, map[string]any{"name": "x"}), http.StatusNotFound, "")
	wantProblem(t, c.Do(http.MethodDelete, path, tn.AdminToken, nil), http.StatusNotFound, "")
	// Without a token nothing is answered but 401.
	wantProblem(t, c.Do(http.MethodGet, "/api/EndUsers", "", nil), http.StatusUnauthorized, "")
}

func TestEndUsersValidation(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	c := client(t)
	existing := createEndUser(t, tn.AgentToken, map[string]any{"name": "Existing"})
	cases := []struct {
		name  string
		body  any
		field string
	}{
		{"name missing", map[string]any{"email": "a@example.com"}, "name"},
		{"name blank", map[string]any{"name": "   "}, "name"},
		{"name too long", map[string]any{"name": strings.Repeat("n", 201)}, "name"},
		{"name not a string", map[string]any{"name": 5}, "name"},
		{"email invalid", map[string]any{"name": "A", "email": "not-an-address"}, "email"},
		{"email with display name", map[string]any{"name": "A", "email": "Ada <ada@example.com>"}, "email"},
		{"phone letters", map[string]any{"name": "A", "phone": "call me maybe"}, "phone"},
		{"phone too long", map[string]any{"name": "A", "phone": strings.Repeat("1", 41)}, "phone"},
		{"language unknown", map[string]any{"name": "A", "language": "xx"}, "language"},
		{"customFieldsData array", map[string]any{"name": "A", "customFieldsData": []int{1, 2}}, "customFieldsData"},
		{"customFieldsData string", map[string]any{"name": "A", "customFieldsData": "x"}, "customFieldsData"},
		{"customFieldsData too large", map[string]any{"name": "A", "customFieldsData": map[string]string{"v": strings.Repeat("x", 16<<10)}}, "customFieldsData"},
		{"malformed JSON", `{"name": "A"`, ""},
		{"not an object", `[{"name": "A"}]`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, c.Do(http.MethodPost, "/api/EndUsers", tn.AgentToken, tc.body), http.StatusBadRequest, tc.field)
			wantProblem(t, c.Do(http.MethodPut, fmt.Sprintf("/api/EndUsers/%d", existing.EndUserID), tn.AgentToken, tc.body),
				http.StatusBadRequest, tc.field)
		})
	}
	wantProblem(t, c.Do(http.MethodGet, "/api/EndUsers/abc", tn.AgentToken, nil), http.StatusBadRequest, "id")
	wantProblem(t, c.Do(http.MethodGet, "/api/EndUsers/01", tn.AgentToken, nil), http.StatusBadRequest, "id")
	// Nothing was created by the refused requests.
	if l := listEndUsers(t, tn.AgentToken, ""); l.TotalCount != 1 {
		t.Fatalf("%d end users", l.TotalCount)
	}
}

func TestEndUsersListPagingFiltersSort(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	carol := createEndUser(t, tn.AgentToken, map[string]any{"name": "carol", "email": "carol@shop.example"})
	bob := createEndUser(t, tn.AgentToken, map[string]any{"name": "Bob", "email": "bob@example.com"})
	alice := createEndUser(t, tn.AgentToken, map[string]any{"name": "Alice", "phone": "+1 (555) 0100"})
	ids := func(l listBody[endUserBody]) []int64 {
		out := []int64{}
		for _, u := range l.Items {
			out = append(out, u.EndUserID)
		}
		return out
	}
	cases := []struct {
		query string
		want  []int64
		total int
		pages int
	}{
		{"", []int64{carol.EndUserID, bob.EndUserID, alice.EndUserID}, 3, 1},
		{"?pageSize=2", []int64{carol.EndUserID, bob.EndUserID}, 3, 2},
		{"?pageSize=2&pageNumber=2", []int64{alice.EndUserID}, 3, 2},
		{"?pageSize=2&pageNumber=3", []int64{}, 3, 2},
		{"?pageSize=100", []int64{carol.EndUserID, bob.EndUserID, alice.EndUserID}, 3, 1},
		{"?sort=-endUserID", []int64{alice.EndUserID, bob.EndUserID, carol.EndUserID}, 3, 1},
		{"?sort=name", []int64{alice.EndUserID, bob.EndUserID, carol.EndUserID}, 3, 1},
		{"?sort=-name", []int64{carol.EndUserID, bob.EndUserID, alice.EndUserID}, 3, 1},
		{"?sort=dateCreated", []int64{carol.EndUserID, bob.EndUserID, alice.EndUserID}, 3, 1},
		{"?sort=-dateCreated", []int64{alice.EndUserID, bob.EndUserID, carol.EndUserID}, 3, 1},
		{"?email=BOB@example.COM", []int64{bob.EndUserID}, 1, 1},
		{"?email=bob@example", []int64{}, 0, 0},
		{"?q=ALI", []int64{alice.EndUserID}, 1, 1},
		{"?q=shop.ex", []int64{carol.EndUserID}, 1, 1},
		{"?q=(555)", []int64{alice.EndUserID}, 1, 1},
		{"?q=b&sort=-name", []int64{bob.EndUserID}, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			l := listEndUsers(t, tn.AgentToken, tc.query)
			if got := ids(l); !reflect.DeepEqual(got, tc.want) || l.TotalCount != tc.total || l.TotalPages != tc.pages {
				t.Fatalf("got %v (total %d, pages %d), want %v (total %d, pages %d)", got, l.TotalCount, l.TotalPages, tc.want, tc.total, tc.pages)
			}
		})
	}
	c := client(t)
	for query, field := range map[string]string{"?pageSize=101": "pageSize", "?pageSize=0": "pageSize", "?pageNumber=0": "pageNumber",
		"?sort=email": "sort", "?q=a&Q=b": "q"} {
		wantProblem(t, c.Do(http.MethodGet, "/api/EndUsers"+query, tn.AgentToken, nil), http.StatusBadRequest, field)
	}
}

func TestEndUsersDuplicateEmail(t *testing.T) {
	t.Parallel()
	tn, other := newTenant(t), newTenant(t)
	c := client(t)
	createEndUser(t, tn.AgentToken, map[string]any{"name": "First", "email": "dup@example.com"})
	wantProblem(t, c.Do(http.MethodPost, "/api/EndUsers", tn.AgentToken, map[string]any{"name": "Second", "email": "DUP@Example.com"}),
		http.StatusConflict, "email")
	second := createEndUser(t, tn.AgentToken, map[string]any{"name": "Second"})
	wantProblem(t, c.Do(http.MethodPut, fmt.Sprintf("/api/EndUsers/%d", second.EndUserID), tn.AgentToken,
		map[string]any{"name": "Second", "email": "Dup@example.com"}), http.StatusConflict, "email")
	// End users without an address do not collide, and another customer
	// may use the same address.
	createEndUser(t, tn.AgentToken, map[string]any{"name": "Third"})
	createEndUser(t, other.AgentToken, map[string]any{"name": "Elsewhere", "email": "dup@example.com"})
}

func TestEndUsersRolesAndTenants(t *testing.T) {
	t.Parallel()
	a, b := newTenant(t), newTenant(t)
	c := client(t)
	// Agents write end users, not just admins.
	u := createEndUser(t, a.AgentToken, map[string]any{"name": "By agent"})
	path := fmt.Sprintf("/api/EndUsers/%d", u.EndUserID)
	wantStatus(t, c.Do(http.MethodPut, path, a.AgentToken, map[string]any{"name": "Renamed by agent"}), http.StatusNoContent, nil)

	// Another customer's id is not found, whatever the method.
	wantProblem(t, c.Do(http.MethodGet, path, b.AdminToken, nil), http.StatusNotFound, "")
	wantProblem(t, c.Do(http.MethodPut, path, b.AdminToken, map[string]any{"name": "Hijack"}), http.StatusNotFound, "")
	wantProblem(t, c.Do(http.MethodDelete, path, b.AdminToken, nil), http.StatusNotFound, "")
	if l := listEndUsers(t, b.AdminToken, ""); l.TotalCount != 0 {
		t.Fatalf("tenant B sees %+v", l)
	}
	var got endUserBody
	wantStatus(t, c.Do(http.MethodGet, path, a.AdminToken, nil), http.StatusOK, &got)
	if got.Name != "Renamed by agent" {
		t.Fatalf("after the other tenant's attempts: %+v", got)
	}
	wantStatus(t, c.Do(http.MethodDelete, path, a.AgentToken, nil), http.StatusNoContent, nil)

	// So do integrations.
	email, password := "integration-"+randid.Hex(4)+"@integrations.test", "pw-"+randid.Hex(10)
	wantStatus(t, c.Do(http.MethodPost, "/api/Accounts", a.AdminToken, map[string]string{"email": email, "password": password,
		"name": "Shop sync", "role": "integration"}), http.StatusCreated, nil)
	integration := c.Login(email, password)
	iu := createEndUser(t, integration, map[string]any{"name": "From the shop"})
	ipath := fmt.Sprintf("/api/EndUsers/%d", iu.EndUserID)
	wantStatus(t, c.Do(http.MethodPut, ipath, integration, map[string]any{"name": "From the shop, renamed"}), http.StatusNoContent, nil)
	if l := listEndUsers(t, integration, ""); l.TotalCount != 1 || l.Items[0].EndUserID != iu.EndUserID {
		t.Fatalf("integration lists %+v", l)
	}
	wantStatus(t, c.Do(http.MethodDelete, ipath, integration, nil), http.StatusNoContent, nil)
}

func TestEndUserWithTicketsCannotBeDeleted(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	c := client(t)
	u := createEndUser(t, tn.AgentToken, map[string]any{"name": "Has a ticket", "email": "ticket@example.com"})
	var ticket struct {
		TicketID int64 `json:"ticketID"`
	}
	wantStatus(t, c.Do(http.MethodPost, "/api/Tickets", tn.AgentToken, map[string]any{"subject": "Help",
		"channelID": createChannel(t, tn), "endUserID": u.EndUserID}), http.StatusCreated, &ticket)
	path := fmt.Sprintf("/api/EndUsers/%d", u.EndUserID)
	wantProblem(t, c.Do(http.MethodDelete, path, tn.AdminToken, nil), http.StatusConflict, "")
	wantStatus(t, c.Do(http.MethodGet, path, tn.AdminToken, nil), http.StatusOK, nil)
	wantStatus(t, c.Do(http.MethodDelete, fmt.Sprintf("/api/Tickets/%d", ticket.TicketID), tn.AgentToken, nil), http.StatusNoContent, nil)
	wantStatus(t, c.Do(http.MethodDelete, path, tn.AdminToken, nil), http.StatusNoContent, nil)
}

func TestEndUsersIdempotencyKey(t *testing.T) {
	t.Parallel()
	a, b := newTenant(t), newTenant(t)
	key := "create-" + randid.Hex(8)
	body := map[string]any{"name": "Once", "email": "once@example.com"}
	first := postWithKey(t, a.AgentToken, key, body)
	var u endUserBody
	wantStatus(t, first, http.StatusCreated, &u)
	if first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatal("the first answer is marked replayed")
	}
	again := postWithKey(t, a.AgentToken, key, body)
	wantStatus(t, again, http.StatusCreated, nil)
	if string(again.Body) != string(first.Body) || again.Header.Get("Location") != first.Header.Get("Location") ||
		again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay %v %s, first %v %s", again.Header, again.Body, first.Header, first.Body)
	}
	if l := listEndUsers(t, a.AgentToken, ""); l.TotalCount != 1 || l.Items[0].EndUserID != u.EndUserID {
		t.Fatalf("end users after the replay: %+v", l)
	}
	// The same key with another body is refused.
	wantProblem(t, postWithKey(t, a.AgentToken, key, map[string]any{"name": "Twice"}), http.StatusUnprocessableEntity, "Idempotency-Key")
	// Another customer's key space is its own.
	other := postWithKey(t, b.AgentToken, key, body)
	var ou endUserBody
	wantStatus(t, other, http.StatusCreated, &ou)
	if ou.EndUserID == u.EndUserID || ou.CustomerID != b.CustomerID || other.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("tenant B got %+v %v", ou, other.Header)
	}
	// A refused request is replayed as refused.
	badKey := "bad-" + randid.Hex(8)
	bad := postWithKey(t, a.AgentToken, badKey, map[string]any{"name": ""})
	wantProblem(t, bad, http.StatusBadRequest, "name")
	badAgain := postWithKey(t, a.AgentToken, badKey, map[string]any{"name": ""})
	wantProblem(t, badAgain, http.StatusBadRequest, "name")
	if badAgain.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatal("the 400 was not replayed")
	}
	wantProblem(t, postWithKey(t, a.AgentToken, strings.Repeat("k", 256), body), http.StatusBadRequest, "Idempotency-Key")
	if l := listEndUsers(t, a.AgentToken, ""); l.TotalCount != 1 {
		t.Fatalf("%d end users", l.TotalCount)
	}
}
