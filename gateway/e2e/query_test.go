package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"supportplatform.dev/pkg/randid"
)

// Every list reads its query the same way (httpserver.Query): names in any
// case, integers without spaces, signs or leading zeros, each parameter at
// most once. Before, " 10" passed on topics but not on /api/Accounts, and
// pagesize worked on topics but was silently ignored on /api/Accounts.
func TestStrictQueryParameters(t *testing.T) {
	c := client(t)
	_, _, admin := newCustomer(t, "Query Co")
	// Six records in each list: the admin plus five agents, six topics.
	for i := range 5 {
		r := c.Do(http.MethodPost, "/api/Accounts", admin, map[string]string{
			"email": fmt.Sprintf("agent%d-%s@query.test", i, randid.Hex(3)), "name": "Agent", "role": "agent", "password": "agent passphrase"})
		if r.Status != http.StatusCreated {
			t.Fatalf("create agent: %d %s", r.Status, r.Body)
		}
	}
	var topicID int64
	for i := range 6 {
		r := c.Do(http.MethodPost, "/api/Topics", admin, map[string]string{"name": "Query topic " + strconv.Itoa(i)})
		var b topicBody
		wantOK(t, r, http.StatusCreated, &b)
		topicID = b.TopicID
	}

	for _, list := range []string{"/api/Accounts", "/api/Topics"} {
		t.Run(list, func(t *testing.T) {
			refused := []struct{ query, field string }{
				{"pageSize=%2010", "pageSize"},
				{"pageSize=10%20", "pageSize"},
				{"pageSize=%2B5", "pageSize"},
				{"pageSize=+5", "pageSize"}, // "+" is a space in a query
				{"pageSize=010", "pageSize"},
				{"pageNumber=01", "pageNumber"},
				{"pageNumber=-1", "pageNumber"},
				{"pageSize=5&pageSize=5", "pageSize"},
				{"pageSize=5&PAGESIZE=6", "pageSize"},
				{"pagesize=0", "pageSize"},
			}
			for _, tc := range refused {
				wantProblem(t, c.Do(http.MethodGet, list+"?"+tc.query, admin, nil), http.StatusBadRequest, tc.field)
			}
			for _, q := range []string{"pagesize=5", "PAGESIZE=5&pagenumber=1", "pageSize=5"} {
				var page struct {
					Items      []map[string]any `json:"items"`
					TotalCount int              `json:"totalCount"`
					TotalPages int              `json:"totalPages"`
				}
				wantOK(t, c.Do(http.MethodGet, list+"?"+q, admin, nil), http.StatusOK, &page)
				if len(page.Items) != 5 || page.TotalCount != 6 || page.TotalPages != 2 {
					t.Fatalf("%s?%s: %d items of %d in %d pages", list, q, len(page.Items), page.TotalCount, page.TotalPages)
				}
			}
			var page struct {
				Items []map[string]any `json:"items"`
			}
			wantOK(t, c.Do(http.MethodGet, list+"?PageNumber=2&PageSize=5", admin, nil), http.StatusOK, &page)
			if len(page.Items) != 1 {
				t.Fatalf("%s page 2 of 5: %d items", list, len(page.Items))
			}
		})
	}

	// Path ids have the same syntax: "01" is not the id 1.
	id := strconv.FormatInt(topicID, 10)
	wantOK(t, c.Do(http.MethodGet, "/api/Topics/"+id, admin, nil), http.StatusOK, nil)
	for _, bad := range []string{"0" + id, "%2B" + id, "%20" + id, id + "%20"} {
		wantProblem(t, c.Do(http.MethodGet, "/api/Topics/"+bad, admin, nil), http.StatusBadRequest, "id")
		wantProblem(t, c.Do(http.MethodGet, "/api/Accounts/"+bad, admin, nil), http.StatusBadRequest, "id")
	}
}

// A NUL character in any JSON string is a 400 naming the field, never the
// 500 that PostgreSQL's refusal used to become.
func TestNULInBodiesRefused(t *testing.T) {
	c := client(t)
	_, _, admin := newCustomer(t, "NUL Co")
	wantProblem(t, c.Do(http.MethodPost, "/api/Auth/login", "", `{"email":"a\u0000@example.com","password":"x"}`), http.StatusBadRequest, "email")
	wantProblem(t, c.Do(http.MethodPost, "/api/Accounts", admin,
		`{"email":"nul-`+randid.Hex(3)+`@nul.test","name":"Ann\u0000","role":"agent","password":"agent passphrase"}`), http.StatusBadRequest, "name")
	wantProblem(t, c.Do(http.MethodPost, "/api/Topics", admin, `{"name":"x","description":"\u0000"}`), http.StatusBadRequest, "description")
	wantProblem(t, c.Do(http.MethodPost, "/api/TopicActions/bulk", admin, `{"items":[{"topicId":1,"actionId":2},{"topicId":1,"actionId":3,"hookName":"\u0000"}]}`), http.StatusBadRequest, "items[1].hookName")
}
