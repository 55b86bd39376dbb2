package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/contracts"
)

type topicJSON struct {
	TopicID     int64  `json:"topicID"`
	CustomerID  int64  `json:"customerID"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

type actionJSON struct {
	ActionID   int64  `json:"actionID"`
	CustomerID int64  `json:"customerID"`
	Name       string `json:"name"`
	HookName   string `json:"hookName"`
	ChannelID  *int64 `json:"channelID"`
	IsActive   bool   `json:"isActive"`
}

type documentJSON struct {
	DocumentID int64  `json:"documentID"`
	CustomerID int64  `json:"customerID"`
	Title      string `json:"title"`
	Content    string `json:"content"`
	ChannelID  *int64 `json:"channelID"`
	HookName   string `json:"hookName"`
	IsHook     bool   `json:"isHook"`
}

type topicActionJSON struct {
	TopicActionID int64 `json:"topicActionID"`
	TopicID       int64 `json:"topicID"`
	ActionID      int64 `json:"actionID"`
	Priority      int   `json:"priority"`
	IsActive      bool  `json:"isActive"`
}

type topicDocumentJSON struct {
	TopicDocumentID int64 `json:"topicDocumentID"`
	TopicID         int64 `json:"topicID"`
	DocumentID      int64 `json:"documentID"`
	RelevanceScore  int   `json:"relevanceScore"`
}

type pageMappingJSON struct {
	PageTopicMappingID int64  `json:"pageTopicMappingID"`
	TopicID            int64  `json:"topicID"`
	URLPattern         string `json:"urlPattern"`
	MatchType          string `json:"matchType"`
}

type lookupJSON struct {
	URL    string      `json:"url"`
	Topics []topicJSON `json:"topics"`
}

type pageOf[T any] struct {
	Items      []T `json:"items"`
	TotalCount int `json:"totalCount"`
	TotalPages int `json:"totalPages"`
}

// keys lists the JSON object keys of body, sorted (the spec's names are
// case-sensitive, which a struct decode would not notice).
func keys(t *testing.T, body []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("not an object: %s", body)
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func wantKeys(t *testing.T, body []byte, want ...string) {
	t.Helper()
	sort.Strings(want)
	if got := keys(t, body); !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
}

func (c client) createTopic(name, description string) topicJSON {
	c.t.Helper()
	var tp topicJSON
	c.post("/api/Topics", map[string]any{"name": name, "description": description}).expect(c.t, http.StatusCreated, &tp)
	return tp
}

func (c client) createAction(name, hook string, channel *int64, active bool) actionJSON {
	c.t.Helper()
	var a actionJSON
	c.post("/api/Actions", map[string]any{"name": name, "hookName": hook, "channelID": channel, "isActive": active}).expect(c.t, http.StatusCreated, &a)
	return a
}

func (c client) createDocument(title string, channel *int64, hook string, isHook bool) documentJSON {
	c.t.Helper()
	var d documentJSON
	c.post("/api/Documents", map[string]any{"title": title, "content": title + " text", "channelID": channel, "hookName": hook, "isHook": isHook}).
		expect(c.t, http.StatusCreated, &d)
	return d
}

func (c client) mapAction(topicID, actionID int64, priority int, active bool) topicActionJSON {
	c.t.Helper()
	var m topicActionJSON
	c.post("/api/TopicActions", map[string]any{"topicID": topicID, "actionID": actionID, "priority": priority, "isActive": active}).
		expect(c.t, http.StatusCreated, &m)
	return m
}

func (c client) mapDocument(topicID, documentID int64, score int) topicDocumentJSON {
	c.t.Helper()
	var m topicDocumentJSON
	c.post("/api/TopicDocuments", map[string]any{"topicID": topicID, "documentID": documentID, "relevanceScore": score}).
		expect(c.t, http.StatusCreated, &m)
	return m
}

func (c client) mapPage(topicID int64, pattern, matchType string) pageMappingJSON {
	c.t.Helper()
	var m pageMappingJSON
	c.post("/api/PageTopicMappings", map[string]any{"topicID": topicID, "urlPattern": pattern, "matchType": matchType}).
		expect(c.t, http.StatusCreated, &m)
	return m
}

func ptr[T any](v T) *T { return &v }

func TestAPI(t *testing.T) {
	s := startService(t)

	t.Run("authentication", func(t *testing.T) { testAuthentication(t, s) })
	t.Run("topics CRUD", func(t *testing.T) { testTopicsCRUD(t, s) })
	t.Run("topics validation", func(t *testing.T) { testTopicsValidation(t, s) })
	t.Run("topics list", func(t *testing.T) { testTopicsList(t, s) })
	t.Run("cross-tenant", func(t *testing.T) { testCrossTenant(t, s) })
	t.Run("topic actions", func(t *testing.T) { testTopicActions(t, s) })
	t.Run("topic actions bulk", func(t *testing.T) { testBulk(t, s) })
	t.Run("topic documents", func(t *testing.T) { testTopicDocuments(t, s) })
	t.Run("page mappings", func(t *testing.T) { testPageMappings(t, s) })
	t.Run("topic deletion", func(t *testing.T) { testTopicDeletion(t, s) })
	t.Run("actions and documents", func(t *testing.T) { testActionsAndDocuments(t, s) })
	t.Run("request handling", func(t *testing.T) { testRequestHandling(t, s) })
}

func testAuthentication(t *testing.T, s *service) {
	anon := client{t: t, s: s}
	routes := [][2]string{
		{"GET", "/api/Topics"}, {"POST", "/api/Topics"}, {"GET", "/api/Topics/1"}, {"PUT", "/api/Topics/1"}, {"DELETE", "/api/Topics/1"},
		{"GET", "/api/TopicActions"}, {"POST", "/api/TopicActions"}, {"POST", "/api/TopicActions/bulk"},
		{"GET", "/api/TopicActions/1"}, {"PUT", "/api/TopicActions/1"}, {"DELETE", "/api/TopicActions/1"},
		{"GET", "/api/TopicDocuments"}, {"POST", "/api/TopicDocuments"}, {"GET", "/api/TopicDocuments/1"},
		{"PUT", "/api/TopicDocuments/1"}, {"DELETE", "/api/TopicDocuments/1"},
		{"GET", "/api/PageTopicMappings"}, {"POST", "/api/PageTopicMappings"}, {"GET", "/api/PageTopicMappings/lookup?url=https://a.example/"},
		{"GET", "/api/PageTopicMappings/1"}, {"PUT", "/api/PageTopicMappings/1"}, {"DELETE", "/api/PageTopicMappings/1"},
		{"GET", "/api/Actions"}, {"POST", "/api/Actions"}, {"GET", "/api/Actions/1"}, {"PUT", "/api/Actions/1"}, {"DELETE", "/api/Actions/1"},
		{"GET", "/api/Documents"}, {"POST", "/api/Documents"}, {"GET", "/api/Documents/1"}, {"PUT", "/api/Documents/1"}, {"DELETE", "/api/Documents/1"},
	}
	for _, r := range routes {
		resp := anon.do(r[0], r[1], "{}")
		resp.expectProblem(t, http.StatusUnauthorized)
		if resp.header.Get("WWW-Authenticate") == "" {
			t.Fatalf("%s %s: no WWW-Authenticate", r[0], r[1])
		}
	}
	bad := map[string]string{
		"expired": s.token(t, 1, func(c *authn.Claims, _ *jwt.Token) {
			c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-time.Hour))
			c.IssuedAt = jwt.NewNumericDate(time.Now().Add(-2 * time.Hour))
		}),
		"wrong audience": s.token(t, 1, func(c *authn.Claims, _ *jwt.Token) { c.Audience = jwt.ClaimStrings{"other"} }),
		"wrong issuer":   s.token(t, 1, func(c *authn.Claims, _ *jwt.Token) { c.Issuer = "other" }),
		"unknown kid":    s.token(t, 1, func(_ *authn.Claims, tk *jwt.Token) { tk.Header["kid"] = "nope" }),
		"garbage":        "not.a.token",
	}
	for name, tok := range bad {
		t.Run(name, func(t *testing.T) {
			client{t: t, s: s, token: tok}.get("/api/Topics").expectProblem(t, http.StatusUnauthorized)
		})
	}
}

func testTopicsCRUD(t *testing.T, s *service) {
	c := s.newCustomer(t)
	resp := c.post("/api/Topics", map[string]any{"name": "  Billing  ", "description": "Invoices and payments"})
	var tp topicJSON
	resp.expect(t, http.StatusCreated, &tp)
	wantKeys(t, resp.body, "topicID", "customerID", "name", "description")
	if tp.TopicID <= 0 || tp.Name != "Billing" || tp.Description != "Invoices and payments" || tp.CustomerID <= 1000 {
		t.Fatalf("created %+v", tp)
	}
	loc := resp.header.Get("Location")
	if loc != path("/api/Topics", tp.TopicID) {
		t.Fatalf("Location %q", loc)
	}
	var got topicJSON
	c.get(loc).expect(t, http.StatusOK, &got)
	if got != tp {
		t.Fatalf("GET %+v, want %+v", got, tp)
	}

	// Description is optional.
	bare := c.createTopic("No description", "")
	wantKeys(t, c.get(path("/api/Topics", bare.TopicID)).body, "topicID", "customerID", "name", "description")

	// PUT replaces name and description: 204, no body.
	put := c.put(loc, map[string]any{"name": "Billing & invoices"}).expect(t, http.StatusNoContent, nil)
	if len(put.body) != 0 {
		t.Fatalf("PUT body %q", put.body)
	}
	c.get(loc).expect(t, http.StatusOK, &got)
	if got.Name != "Billing & invoices" || got.Description != "" {
		t.Fatalf("after PUT %+v", got)
	}
	// PUT to its own name (another case) is not a conflict with itself.
	c.put(loc, map[string]any{"name": "BILLING & INVOICES", "description": "d"}).expect(t, http.StatusNoContent, nil)

	c.del(loc).expect(t, http.StatusNoContent, nil)
	c.get(loc).expectProblem(t, http.StatusNotFound)
	c.del(loc).expectProblem(t, http.StatusNotFound)
	c.put(loc, map[string]any{"name": "x"}).expectProblem(t, http.StatusNotFound)
	c.get(path("/api/Topics", 987654321)).expectProblem(t, http.StatusNotFound)
}

func testTopicsValidation(t *testing.T, s *service) {
	c := s.newCustomer(t)
	existing := c.createTopic("Returns", "")
	long := strings.Repeat("x", 201)
	cases := []struct {
		name   string
		body   any
		status int
		fields []string
	}{
		{"missing name", `{"description":"d"}`, 400, []string{"name"}},
		{"blank name", `{"name":"   "}`, 400, []string{"name"}},
		{"null name", `{"name":null}`, 400, []string{"name"}},
		{"name too long", map[string]any{"name": long}, 400, []string{"name"}},
		{"name with newline", map[string]any{"name": "a\nb"}, 400, []string{"name"}},
		{"name wrong type", `{"name":5}`, 400, []string{"name"}},
		{"description too long", map[string]any{"name": "ok", "description": strings.Repeat("d", 2001)}, 400, []string{"description"}},
		{"description wrong type", `{"name":"ok","description":["a"]}`, 400, []string{"description"}},
		{"NUL in description", map[string]any{"name": "ok", "description": "a\x00b"}, 400, []string{"description"}},
		{"both invalid", map[string]any{"name": "", "description": strings.Repeat("d", 2001)}, 400, []string{"name", "description"}},
		{"duplicate, other case and spaces", map[string]any{"name": "  rETURNS "}, 409, []string{"name"}},
		{"malformed JSON", `{"name":`, 400, nil},
		{"trailing garbage", `{"name":"a"} {}`, 400, nil},
		{"array body", `[{"name":"a"}]`, 400, nil},
		{"empty body", ``, 400, nil},
		{"wrong content type", rawBody{"text/plain", `{"name":"a"}`}, 415, nil},
		{"no content type", rawBody{"", `{"name":"a"}`}, 415, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := client{t: t, s: s, token: c.token}
			c.post("/api/Topics", tc.body).expectProblem(t, tc.status, tc.fields...)
			if tc.status == 400 {
				c.put(path("/api/Topics", existing.TopicID), tc.body).expectProblem(t, tc.status, tc.fields...)
			}
		})
	}
	// 200 characters after trimming is fine.
	c.createTopic(" "+strings.Repeat("é", 200)+" ", "")
	// Rename onto another topic's name is a conflict.
	other := c.createTopic("Other", "")
	c.put(path("/api/Topics", other.TopicID), map[string]any{"name": "returns"}).expectProblem(t, http.StatusConflict, "name")
	// Ids in the path.
	for _, id := range []string{"abc", "0", "-1", "1.5", "99999999999999999999", "%20", "0" + itoa(other.TopicID), "%2B" + itoa(other.TopicID), "%20" + itoa(other.TopicID)} {
		for _, m := range []string{"GET", "PUT", "DELETE"} {
			c.do(m, "/api/Topics/"+id, map[string]any{"name": "x"}).expectProblem(t, http.StatusBadRequest, "id")
		}
	}
}

func testTopicsList(t *testing.T, s *service) {
	c := s.newCustomer(t)
	var created []topicJSON
	for i := 1; i <= 25; i++ {
		created = append(created, c.createTopic(fmt.Sprintf("Topic %02d", i), ""))
	}
	apple := c.createTopic("apple pie", "")
	banana := c.createTopic("Banana split", "")
	all := append(append([]topicJSON{}, created...), apple, banana)
	// Another customer's topics never show up.
	s.newCustomer(t).createTopic("Topic 99 of someone else", "")

	list := func(t *testing.T, query string) (pageOf[topicJSON], response) {
		t.Helper()
		var p pageOf[topicJSON]
		r := c.get("/api/Topics?"+query).expect(t, http.StatusOK, &p)
		wantKeys(t, r.body, "items", "totalCount", "totalPages")
		return p, r
	}
	ids := func(ts []topicJSON) []int64 {
		var out []int64
		for _, tp := range ts {
			out = append(out, tp.TopicID)
		}
		return out
	}

	p, _ := list(t, "")
	if p.TotalCount != 27 || p.TotalPages != 2 || len(p.Items) != 20 || !slices.Equal(ids(p.Items), ids(all[:20])) {
		t.Fatalf("default page: total %d pages %d items %v", p.TotalCount, p.TotalPages, ids(p.Items))
	}
	p, _ = list(t, "pageNumber=2")
	if len(p.Items) != 7 || p.TotalPages != 2 || !slices.Equal(ids(p.Items), ids(all[20:])) {
		t.Fatalf("last page: %v", ids(p.Items))
	}
	p, r := list(t, "pageNumber=3")
	if len(p.Items) != 0 || p.TotalCount != 27 || !strings.Contains(string(r.body), `"items":[]`) {
		t.Fatalf("past the end: %s", r.body)
	}
	p, _ = list(t, "pageSize=100")
	if len(p.Items) != 27 || p.TotalPages != 1 {
		t.Fatalf("pageSize 100: %d items, %d pages", len(p.Items), p.TotalPages)
	}
	p, _ = list(t, "pageSize=1&pageNumber=27")
	if len(p.Items) != 1 || p.TotalPages != 27 || p.Items[0].TopicID != banana.TopicID {
		t.Fatalf("page 27 of 1: %+v", p)
	}
	for _, q := range []string{"pageSize=0", "pageSize=101", "pageSize=-1", "pageSize=abc", "pageNumber=0", "pageNumber=x",
		"pageSize=%2010", "pageSize=10%20", "pageSize=%2B5", "pageSize=010", "pageNumber=01", "pageSize=5&pageSize=5"} {
		field := strings.Split(q, "=")[0]
		c.get("/api/Topics?"+q).expectProblem(t, http.StatusBadRequest, field)
	}
	// Parameter names in any case; the same parameter twice is refused.
	p, _ = list(t, "pagesize=5&PAGENUMBER=2")
	if len(p.Items) != 5 || p.TotalPages != 6 || !slices.Equal(ids(p.Items), ids(all[5:10])) {
		t.Fatalf("pagesize=5&PAGENUMBER=2: %v %d", ids(p.Items), p.TotalPages)
	}
	c.get("/api/Topics?pageSize=5&pagesize=6").expectProblem(t, http.StatusBadRequest, "pageSize")

	// name contains, case-insensitive; % and _ are literal.
	p, _ = list(t, "name=TOPIC%201")
	if p.TotalCount != 10 {
		t.Fatalf("name=TOPIC 1: %d", p.TotalCount)
	}
	p, _ = list(t, "name=an")
	if !slices.Equal(ids(p.Items), []int64{banana.TopicID}) {
		t.Fatalf("name=an: %v", ids(p.Items))
	}
	p, _ = list(t, "name="+url.QueryEscape("%"))
	if p.TotalCount != 0 {
		t.Fatalf("name=%%: %d", p.TotalCount)
	}
	p, _ = list(t, "Name=apple") // parameter names are case-insensitive
	if p.TotalCount != 1 {
		t.Fatalf("Name=apple: %d", p.TotalCount)
	}
	c.get("/api/Topics?name="+strings.Repeat("n", 201)).expectProblem(t, http.StatusBadRequest, "name")
	c.get("/api/Topics?name=%ff").expectProblem(t, http.StatusBadRequest, "name")
	c.get("/api/Topics?name=a%00b").expectProblem(t, http.StatusBadRequest, "name")

	// sort
	p, _ = list(t, "sort=name&pageSize=3")
	if !slices.Equal(ids(p.Items), []int64{apple.TopicID, banana.TopicID, created[0].TopicID}) {
		t.Fatalf("sort=name: %v", ids(p.Items))
	}
	p, _ = list(t, "sort=-name&pageSize=2")
	if !slices.Equal(ids(p.Items), []int64{created[24].TopicID, created[23].TopicID}) {
		t.Fatalf("sort=-name: %v", ids(p.Items))
	}
	p, _ = list(t, "sort=-topicID&pageSize=1")
	if p.Items[0].TopicID != banana.TopicID {
		t.Fatalf("sort=-topicID: %v", ids(p.Items))
	}
	p, _ = list(t, "sort=topicId&pageSize=1")
	if p.Items[0].TopicID != created[0].TopicID {
		t.Fatalf("sort=topicId: %v", ids(p.Items))
	}
	for _, bad := range []string{"description", "-", "name,topicID", "customerID"} {
		c.get("/api/Topics?sort="+url.QueryEscape(bad)).expectProblem(t, http.StatusBadRequest, "sort")
	}
	// Several problems are reported together.
	c.get("/api/Topics?sort=x&pageSize=0").expectProblem(t, http.StatusBadRequest, "sort", "pageSize")
}

// testCrossTenant creates one of everything as customer A and checks that
// customer B gets 404 on every id-taking route and cannot link to A's ids.
func testCrossTenant(t *testing.T, s *service) {
	a := s.newCustomer(t)
	b := s.newCustomer(t)
	tp := a.createTopic("A's topic", "")
	act := a.createAction("A's action", "hook", nil, true)
	doc := a.createDocument("A's document", nil, "", false)
	ta := a.mapAction(tp.TopicID, act.ActionID, 1, true)
	td := a.mapDocument(tp.TopicID, doc.DocumentID, 50)
	pm := a.mapPage(tp.TopicID, "https://a.example/", "prefix")

	bodies := map[string]any{
		"/api/Topics":            map[string]any{"name": "stolen"},
		"/api/Actions":           map[string]any{"name": "stolen", "hookName": "h"},
		"/api/Documents":         map[string]any{"title": "stolen"},
		"/api/TopicActions":      map[string]any{"priority": 9},
		"/api/TopicDocuments":    map[string]any{"relevanceScore": 9},
		"/api/PageTopicMappings": map[string]any{"topicID": tp.TopicID, "urlPattern": "https://b.example/", "matchType": "exact"},
	}
	ids := map[string]int64{
		"/api/Topics": tp.TopicID, "/api/Actions": act.ActionID, "/api/Documents": doc.DocumentID,
		"/api/TopicActions": ta.TopicActionID, "/api/TopicDocuments": td.TopicDocumentID, "/api/PageTopicMappings": pm.PageTopicMappingID,
	}
	for base, id := range ids {
		b.get(path(base, id)).expectProblem(t, http.StatusNotFound)
		b.put(path(base, id), bodies[base]).expectProblem(t, http.StatusNotFound)
		b.del(path(base, id)).expectProblem(t, http.StatusNotFound)
		// Still there for the owner, unchanged.
		a.get(path(base, id)).expect(t, http.StatusOK, nil)
	}
	var got topicActionJSON
	a.get(path("/api/TopicActions", ta.TopicActionID)).expect(t, http.StatusOK, &got)
	if got != ta {
		t.Fatalf("A's mapping changed: %+v", got)
	}

	// B cannot link to A's topic, action or document: 400 naming the field.
	bt := b.createTopic("B's topic", "")
	ba := b.createAction("B's action", "hook", nil, true)
	bd := b.createDocument("B's document", nil, "", false)
	b.post("/api/TopicActions", map[string]any{"topicID": tp.TopicID, "actionID": ba.ActionID, "priority": 1}).expectProblem(t, 400, "topicID")
	b.post("/api/TopicActions", map[string]any{"topicID": bt.TopicID, "actionID": act.ActionID, "priority": 1}).expectProblem(t, 400, "actionID")
	b.post("/api/TopicActions/bulk", map[string]any{"items": []any{
		map[string]any{"topicID": bt.TopicID, "actionID": ba.ActionID, "priority": 1},
		map[string]any{"topicID": tp.TopicID, "actionID": act.ActionID, "priority": 1},
	}}).expectProblem(t, 400, "items[1].topicID", "items[1].actionID")
	b.post("/api/TopicDocuments", map[string]any{"topicID": tp.TopicID, "documentID": bd.DocumentID, "relevanceScore": 1}).expectProblem(t, 400, "topicID")
	b.post("/api/TopicDocuments", map[string]any{"topicID": bt.TopicID, "documentID": doc.DocumentID, "relevanceScore": 1}).expectProblem(t, 400, "documentID")
	b.post("/api/PageTopicMappings", map[string]any{"topicID": tp.TopicID, "urlPattern": "https://b.example/", "matchType": "exact"}).expectProblem(t, 400, "topicID")
	bp := b.mapPage(bt.TopicID, "https://b.example/", "exact")
	b.put(path("/api/PageTopicMappings", bp.PageTopicMappingID), map[string]any{"topicID": tp.TopicID, "urlPattern": "https://b.example/", "matchType": "exact"}).
		expectProblem(t, 400, "topicID")

	// Lists and lookups of B hold nothing of A.
	for _, base := range []string{"/api/TopicActions", "/api/TopicDocuments"} {
		var p pageOf[json.RawMessage]
		b.get(base+"?topicId="+itoa(tp.TopicID)).expect(t, http.StatusOK, &p)
		if p.TotalCount != 0 {
			t.Fatalf("%s shows A's mappings to B", base)
		}
	}
	var lk lookupJSON
	b.get("/api/PageTopicMappings/lookup?url="+url.QueryEscape("https://a.example/x")).expect(t, http.StatusOK, &lk)
	if len(lk.Topics) != 0 {
		t.Fatalf("B's lookup found %+v", lk.Topics)
	}
}

func testTopicActions(t *testing.T, s *service) {
	c := s.newCustomer(t)
	t1 := c.createTopic("Payments", "")
	t2 := c.createTopic("Delivery", "")
	slack := c.createAction("Notify", "Slack", ptr[int64](7), true)
	pager := c.createAction("Escalate", "pager", nil, true)
	mail := c.createAction("Mail", "slack", ptr[int64](8), true)

	resp := c.post("/api/TopicActions", map[string]any{"topicID": t1.TopicID, "actionID": slack.ActionID, "priority": 30, "isActive": true})
	var m1 topicActionJSON
	resp.expect(t, http.StatusCreated, &m1)
	wantKeys(t, resp.body, "topicActionID", "topicID", "actionID", "priority", "isActive")
	if resp.header.Get("Location") != path("/api/TopicActions", m1.TopicActionID) || m1.Priority != 30 || !m1.IsActive {
		t.Fatalf("created %+v at %s", m1, resp.header.Get("Location"))
	}
	// isActive defaults to true; priority 0 is valid.
	var m2 topicActionJSON
	c.post("/api/TopicActions", map[string]any{"topicID": t1.TopicID, "actionID": pager.ActionID, "priority": 0}).expect(t, http.StatusCreated, &m2)
	if !m2.IsActive || m2.Priority != 0 {
		t.Fatalf("defaults: %+v", m2)
	}
	m3 := c.mapAction(t1.TopicID, mail.ActionID, 10, false)
	m4 := c.mapAction(t2.TopicID, slack.ActionID, 5, true)

	// Validation, references and duplicates.
	for _, tc := range []struct {
		name   string
		body   any
		status int
		fields []string
	}{
		{"duplicate pair", map[string]any{"topicID": t1.TopicID, "actionID": slack.ActionID, "priority": 1}, 409, []string{"actionID"}},
		{"missing everything", `{}`, 400, []string{"topicID", "actionID", "priority"}},
		{"null priority", map[string]any{"topicID": t1.TopicID, "actionID": slack.ActionID, "priority": nil}, 400, []string{"priority"}},
		{"negative priority", map[string]any{"topicID": t2.TopicID, "actionID": pager.ActionID, "priority": -1}, 400, []string{"priority"}},
		{"priority too high", map[string]any{"topicID": t2.TopicID, "actionID": pager.ActionID, "priority": 10001}, 400, []string{"priority"}},
		{"fractional priority", `{"topicID":1,"actionID":1,"priority":1.5}`, 400, []string{"priority"}},
		{"string id", `{"topicID":"1","actionID":1,"priority":1}`, 400, []string{"topicID"}},
		{"zero ids", map[string]any{"topicID": 0, "actionID": -3, "priority": 1}, 400, []string{"topicID", "actionID"}},
		{"isActive as string", `{"topicID":1,"actionID":1,"priority":1,"isActive":"yes"}`, 400, []string{"isActive"}},
		{"missing topic", map[string]any{"topicID": 99999999, "actionID": pager.ActionID, "priority": 1}, 400, []string{"topicID"}},
		{"missing action", map[string]any{"topicID": t2.TopicID, "actionID": 99999999, "priority": 1}, 400, []string{"actionID"}},
		{"missing both", map[string]any{"topicID": 99999999, "actionID": 99999999, "priority": 1}, 400, []string{"topicID", "actionID"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client{t: t, s: s, token: c.token}.post("/api/TopicActions", tc.body).expectProblem(t, tc.status, tc.fields...)
		})
	}

	list := func(t *testing.T, query string) []int64 {
		t.Helper()
		var p pageOf[topicActionJSON]
		c.get("/api/TopicActions?"+query).expect(t, http.StatusOK, &p)
		var out []int64
		for _, m := range p.Items {
			out = append(out, m.TopicActionID)
		}
		if p.TotalCount != len(out) {
			t.Fatalf("totalCount %d for %d items", p.TotalCount, len(out))
		}
		return out
	}
	for _, tc := range []struct {
		query string
		want  []int64
	}{
		{"", []int64{m2.TopicActionID, m3.TopicActionID, m1.TopicActionID, m4.TopicActionID}},
		{"topicId=" + itoa(t1.TopicID), []int64{m2.TopicActionID, m3.TopicActionID, m1.TopicActionID}},
		{"topicID=" + itoa(t2.TopicID), []int64{m4.TopicActionID}},
		{"actionId=" + itoa(slack.ActionID), []int64{m1.TopicActionID, m4.TopicActionID}},
		{"hookName=SLACK", []int64{m3.TopicActionID, m1.TopicActionID, m4.TopicActionID}},
		{"channelId=7", []int64{m1.TopicActionID, m4.TopicActionID}},
		{"isActive=false", []int64{m3.TopicActionID}},
		{"isActive=TRUE&topicId=" + itoa(t1.TopicID), []int64{m2.TopicActionID, m1.TopicActionID}},
		{"hookName=nothing", nil},
	} {
		t.Run("filter "+tc.query, func(t *testing.T) {
			if got := list(t, tc.query); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	for _, q := range []string{"topicId=abc", "topicId=0", "actionId=-1", "channelId=x", "isActive=maybe", "isActive=1", "hookName=%c3%28"} {
		c.get("/api/TopicActions?"+q).expectProblem(t, http.StatusBadRequest, strings.Split(q, "=")[0])
	}
	c.get("/api/TopicActions?topicId=abc&isActive=maybe&pageSize=0").expectProblem(t, 400, "topicId", "isActive", "pageSize")

	// PUT changes the priority only; the other fields are ignored.
	c.put(path("/api/TopicActions", m1.TopicActionID), map[string]any{"priority": 1, "isActive": false, "topicID": t2.TopicID, "actionID": pager.ActionID}).
		expect(t, http.StatusNoContent, nil)
	var got topicActionJSON
	c.get(path("/api/TopicActions", m1.TopicActionID)).expect(t, http.StatusOK, &got)
	if got != (topicActionJSON{TopicActionID: m1.TopicActionID, TopicID: t1.TopicID, ActionID: slack.ActionID, Priority: 1, IsActive: true}) {
		t.Fatalf("after PUT %+v", got)
	}
	if ids := list(t, "topicId="+itoa(t1.TopicID)); !slices.Equal(ids, []int64{m2.TopicActionID, m1.TopicActionID, m3.TopicActionID}) {
		t.Fatalf("reordered: %v", ids)
	}
	c.put(path("/api/TopicActions", m1.TopicActionID), map[string]any{"isActive": false}).expectProblem(t, 400, "priority")
	c.put(path("/api/TopicActions", m1.TopicActionID), map[string]any{"priority": 10001}).expectProblem(t, 400, "priority")
	c.put(path("/api/TopicActions", m1.TopicActionID), `{"priority":"high"}`).expectProblem(t, 400, "priority")
	c.put(path("/api/TopicActions", 99999999), map[string]any{"priority": 1}).expectProblem(t, 404)

	c.del(path("/api/TopicActions", m3.TopicActionID)).expect(t, http.StatusNoContent, nil)
	c.get(path("/api/TopicActions", m3.TopicActionID)).expectProblem(t, http.StatusNotFound)
	c.del(path("/api/TopicActions", m3.TopicActionID)).expectProblem(t, http.StatusNotFound)
	// The pair is free again.
	c.mapAction(t1.TopicID, mail.ActionID, 10, true)
	for _, id := range []string{"x", "0", "-5"} {
		c.get("/api/TopicActions/"+id).expectProblem(t, 400, "id")
	}
}

func testBulk(t *testing.T, s *service) {
	c := s.newCustomer(t)
	tp := c.createTopic("Bulk topic", "")
	other := c.createTopic("Bulk other", "")
	var acts []actionJSON
	for i := 0; i < 5; i++ {
		acts = append(acts, c.createAction(fmt.Sprintf("a%d", i), "hook", nil, true))
	}
	count := func() int {
		var p pageOf[topicActionJSON]
		c.get("/api/TopicActions?pageSize=100").expect(t, http.StatusOK, &p)
		return p.TotalCount
	}
	item := func(topicID, actionID int64, priority int) map[string]any {
		return map[string]any{"topicID": topicID, "actionID": actionID, "priority": priority}
	}

	// Object form: 201 with the created mappings, in order.
	resp := c.post("/api/TopicActions/bulk", map[string]any{"items": []any{
		item(tp.TopicID, acts[0].ActionID, 2), map[string]any{"topicID": tp.TopicID, "actionID": acts[1].ActionID, "priority": 1, "isActive": false},
	}})
	var out struct {
		Items []topicActionJSON `json:"items"`
	}
	resp.expect(t, http.StatusCreated, &out)
	wantKeys(t, resp.body, "items")
	if len(out.Items) != 2 || out.Items[0].ActionID != acts[0].ActionID || out.Items[1].IsActive || out.Items[1].Priority != 1 || out.Items[0].TopicActionID <= 0 {
		t.Fatalf("bulk = %+v", out.Items)
	}
	var check topicActionJSON
	c.get(path("/api/TopicActions", out.Items[1].TopicActionID)).expect(t, http.StatusOK, &check)
	if check != out.Items[1] {
		t.Fatalf("stored %+v, answered %+v", check, out.Items[1])
	}
	// Bare array form.
	c.post("/api/TopicActions/bulk", []any{item(other.TopicID, acts[0].ActionID, 1)}).expect(t, http.StatusCreated, &out)
	if len(out.Items) != 1 {
		t.Fatalf("array form: %+v", out.Items)
	}
	if n := count(); n != 3 {
		t.Fatalf("%d mappings, want 3", n)
	}

	// Each failure below creates nothing, though other items are valid.
	for _, tc := range []struct {
		name   string
		body   any
		status int
		fields []string
	}{
		{"invalid item", map[string]any{"items": []any{item(tp.TopicID, acts[2].ActionID, 1), item(tp.TopicID, acts[3].ActionID, 1), item(tp.TopicID, acts[4].ActionID, -1)}},
			400, []string{"items[2].priority"}},
		{"missing action", []any{item(tp.TopicID, acts[2].ActionID, 1), item(tp.TopicID, 99999999, 1), item(99999999, acts[3].ActionID, 1)},
			400, []string{"items[1].actionID", "items[2].topicID"}},
		{"existing pair", []any{item(tp.TopicID, acts[2].ActionID, 1), item(tp.TopicID, acts[0].ActionID, 1)},
			409, []string{"items[1].actionID"}},
		{"pair twice in the batch", []any{item(tp.TopicID, acts[2].ActionID, 1), item(tp.TopicID, acts[3].ActionID, 1), item(tp.TopicID, acts[2].ActionID, 5)},
			400, []string{"items[2].actionID"}},
		{"wrong type in an item", `{"items":[{"topicID":1,"actionID":1,"priority":1},{"topicID":"x","actionID":1,"priority":1}]}`,
			400, []string{"items[1].topicID"}},
		{"item not an object", `[{"topicID":1,"actionID":1,"priority":1}, 7]`, 400, []string{"items[1]"}},
		{"missing fields", `[{}]`, 400, []string{"items[0].topicID", "items[0].actionID", "items[0].priority"}},
		{"empty items", `{"items":[]}`, 400, []string{"items"}},
		{"empty array", `[]`, 400, []string{"items"}},
		{"no items", `{"mappings":[]}`, 400, []string{"items"}},
		{"items not an array", `{"items":{}}`, 400, []string{"items"}},
		{"string body", `"items"`, 400, nil},
		{"malformed", `[{"topicID":1,`, 400, nil},
		{"wrong content type", rawBody{"application/x-www-form-urlencoded", "items=1"}, 415, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client{t: t, s: s, token: c.token}.post("/api/TopicActions/bulk", tc.body).expectProblem(t, tc.status, tc.fields...)
			if n := count(); n != 3 {
				t.Fatalf("%d mappings after a failed bulk, want 3", n)
			}
		})
	}

	// At most 100 items; exactly 100 works.
	var many []any
	for i := 0; i < 101; i++ {
		a := c.createAction(fmt.Sprintf("many %d", i), "hook", nil, true)
		many = append(many, item(other.TopicID, a.ActionID, i))
	}
	c.post("/api/TopicActions/bulk", map[string]any{"items": many}).expectProblem(t, 400, "items")
	if n := count(); n != 3 {
		t.Fatalf("%d mappings after a too-large bulk", n)
	}
	c.post("/api/TopicActions/bulk", map[string]any{"items": many[:100]}).expect(t, http.StatusCreated, &out)
	if len(out.Items) != 100 {
		t.Fatalf("%d created", len(out.Items))
	}
	var p pageOf[topicActionJSON]
	c.get("/api/TopicActions?topicId="+itoa(other.TopicID)+"&pageSize=100&pageNumber=2").expect(t, http.StatusOK, &p)
	if p.TotalCount != 101 || p.TotalPages != 2 || len(p.Items) != 1 || p.Items[0].Priority != 99 {
		t.Fatalf("page 2 of the topic's actions: %+v", p)
	}
}

func testTopicDocuments(t *testing.T, s *service) {
	c := s.newCustomer(t)
	t1 := c.createTopic("Docs topic", "")
	t2 := c.createTopic("Docs topic 2", "")
	faq := c.createDocument("FAQ", ptr[int64](3), "", false)
	stock := c.createDocument("Stock", nil, "StockLevel", true)
	terms := c.createDocument("Terms", ptr[int64](3), "", false)

	resp := c.post("/api/TopicDocuments", map[string]any{"topicID": t1.TopicID, "documentID": faq.DocumentID, "relevanceScore": 40})
	var m1 topicDocumentJSON
	resp.expect(t, http.StatusCreated, &m1)
	wantKeys(t, resp.body, "topicDocumentID", "topicID", "documentID", "relevanceScore")
	if resp.header.Get("Location") != path("/api/TopicDocuments", m1.TopicDocumentID) || m1.RelevanceScore != 40 {
		t.Fatalf("created %+v", m1)
	}
	m2 := c.mapDocument(t1.TopicID, stock.DocumentID, 100)
	m3 := c.mapDocument(t2.TopicID, terms.DocumentID, 0)

	for _, tc := range []struct {
		name   string
		body   any
		status int
		fields []string
	}{
		{"duplicate", map[string]any{"topicID": t1.TopicID, "documentID": faq.DocumentID, "relevanceScore": 1}, 409, []string{"documentID"}},
		{"missing all", `{}`, 400, []string{"topicID", "documentID", "relevanceScore"}},
		{"score too high", map[string]any{"topicID": t2.TopicID, "documentID": faq.DocumentID, "relevanceScore": 101}, 400, []string{"relevanceScore"}},
		{"negative score", map[string]any{"topicID": t2.TopicID, "documentID": faq.DocumentID, "relevanceScore": -1}, 400, []string{"relevanceScore"}},
		{"score as string", `{"topicID":1,"documentID":1,"relevanceScore":"high"}`, 400, []string{"relevanceScore"}},
		{"missing document", map[string]any{"topicID": t2.TopicID, "documentID": 99999999, "relevanceScore": 1}, 400, []string{"documentID"}},
		{"missing topic", map[string]any{"topicID": 99999999, "documentID": faq.DocumentID, "relevanceScore": 1}, 400, []string{"topicID"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client{t: t, s: s, token: c.token}.post("/api/TopicDocuments", tc.body).expectProblem(t, tc.status, tc.fields...)
		})
	}

	list := func(t *testing.T, query string) []int64 {
		t.Helper()
		var p pageOf[topicDocumentJSON]
		c.get("/api/TopicDocuments?"+query).expect(t, http.StatusOK, &p)
		var out []int64
		for _, m := range p.Items {
			out = append(out, m.TopicDocumentID)
		}
		return out
	}
	for _, tc := range []struct {
		query string
		want  []int64
	}{
		{"", []int64{m2.TopicDocumentID, m1.TopicDocumentID, m3.TopicDocumentID}},
		{"topicId=" + itoa(t1.TopicID), []int64{m2.TopicDocumentID, m1.TopicDocumentID}},
		{"documentId=" + itoa(terms.DocumentID), []int64{m3.TopicDocumentID}},
		{"channelId=3", []int64{m1.TopicDocumentID, m3.TopicDocumentID}},
		{"hookName=stocklevel", []int64{m2.TopicDocumentID}},
		{"isHook=true", []int64{m2.TopicDocumentID}},
		{"isHook=false&channelId=3&topicId=" + itoa(t2.TopicID), []int64{m3.TopicDocumentID}},
		{"pageSize=1&pageNumber=3", []int64{m3.TopicDocumentID}},
	} {
		t.Run("filter "+tc.query, func(t *testing.T) {
			if got := list(t, tc.query); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	for _, q := range []string{"topicId=x", "documentId=0", "channelId=-2", "isHook=maybe", "pageSize=101", "hookName=%fe"} {
		c.get("/api/TopicDocuments?"+q).expectProblem(t, 400, strings.Split(q, "=")[0])
	}

	c.put(path("/api/TopicDocuments", m1.TopicDocumentID), map[string]any{"relevanceScore": 77, "topicID": t2.TopicID}).expect(t, http.StatusNoContent, nil)
	var got topicDocumentJSON
	c.get(path("/api/TopicDocuments", m1.TopicDocumentID)).expect(t, http.StatusOK, &got)
	if got != (topicDocumentJSON{TopicDocumentID: m1.TopicDocumentID, TopicID: t1.TopicID, DocumentID: faq.DocumentID, RelevanceScore: 77}) {
		t.Fatalf("after PUT %+v", got)
	}
	c.put(path("/api/TopicDocuments", m1.TopicDocumentID), `{}`).expectProblem(t, 400, "relevanceScore")
	c.put(path("/api/TopicDocuments", m1.TopicDocumentID), map[string]any{"relevanceScore": 101}).expectProblem(t, 400, "relevanceScore")
	c.del(path("/api/TopicDocuments", m1.TopicDocumentID)).expect(t, http.StatusNoContent, nil)
	c.get(path("/api/TopicDocuments", m1.TopicDocumentID)).expectProblem(t, 404)
	c.del(path("/api/TopicDocuments", m1.TopicDocumentID)).expectProblem(t, 404)
}

func testPageMappings(t *testing.T, s *service) {
	c := s.newCustomer(t)
	help := c.createTopic("Help", "")
	billing := c.createTopic("Billing", "")
	invoices := c.createTopic("Invoices", "")
	pricing := c.createTopic("Pricing", "")

	resp := c.post("/api/PageTopicMappings", map[string]any{"topicID": help.TopicID, "urlPattern": "HTTPS://Shop.Example:443", "matchType": "prefix"})
	var root pageMappingJSON
	resp.expect(t, http.StatusCreated, &root)
	wantKeys(t, resp.body, "pageTopicMappingID", "topicID", "urlPattern", "matchType")
	if root.URLPattern != "https://shop.example/" || root.MatchType != "prefix" || resp.header.Get("Location") != path("/api/PageTopicMappings", root.PageTopicMappingID) {
		t.Fatalf("created %+v", root)
	}
	c.mapPage(billing.TopicID, "https://shop.example/account/billing", "prefix")
	c.mapPage(invoices.TopicID, "https://shop.example/account/billing#section", "PREFIX")
	exact := c.mapPage(pricing.TopicID, "https://shop.example/pricing", "exact")

	for _, tc := range []struct {
		name   string
		body   any
		status int
		fields []string
	}{
		{"duplicate after normalising", map[string]any{"topicID": pricing.TopicID, "urlPattern": "https://SHOP.example/pricing#x", "matchType": "exact"}, 409, []string{"urlPattern"}},
		{"missing all", `{}`, 400, []string{"topicID", "urlPattern", "matchType"}},
		{"relative url", map[string]any{"topicID": help.TopicID, "urlPattern": "/help", "matchType": "exact"}, 400, []string{"urlPattern"}},
		{"ftp url", map[string]any{"topicID": help.TopicID, "urlPattern": "ftp://shop.example/", "matchType": "exact"}, 400, []string{"urlPattern"}},
		{"bad match type", map[string]any{"topicID": help.TopicID, "urlPattern": "https://shop.example/x", "matchType": "regex"}, 400, []string{"matchType"}},
		{"missing topic", map[string]any{"topicID": 99999999, "urlPattern": "https://shop.example/x", "matchType": "exact"}, 400, []string{"topicID"}},
		{"url too long", map[string]any{"topicID": help.TopicID, "urlPattern": "https://shop.example/" + strings.Repeat("a", 2100), "matchType": "exact"}, 400, []string{"urlPattern"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client{t: t, s: s, token: c.token}.post("/api/PageTopicMappings", tc.body).expectProblem(t, tc.status, tc.fields...)
		})
	}

	lookup := func(t *testing.T, raw string) lookupJSON {
		t.Helper()
		var lk lookupJSON
		r := c.get("/api/PageTopicMappings/lookup?url="+url.QueryEscape(raw)).expect(t, http.StatusOK, &lk)
		wantKeys(t, r.body, "url", "topics")
		return lk
	}
	names := func(lk lookupJSON) []string {
		out := []string{}
		for _, tp := range lk.Topics {
			out = append(out, tp.Name)
		}
		return out
	}
	for _, tc := range []struct {
		url, normal string
		want        []string
	}{
		{"https://shop.example/account/billing/2024?page=2#top", "https://shop.example/account/billing/2024?page=2", []string{"Billing", "Invoices"}},
		{"HTTPS://SHOP.EXAMPLE/account", "https://shop.example/account", []string{"Help"}},
		{"https://shop.example/pricing#plans", "https://shop.example/pricing", []string{"Pricing", "Help"}},
		{"https://shop.example/Pricing", "https://shop.example/Pricing", []string{"Help"}},
		{"https://elsewhere.example", "https://elsewhere.example/", []string{}},
		{"http://shop.example/account", "http://shop.example/account", []string{}},
	} {
		t.Run("lookup "+tc.url, func(t *testing.T) {
			lk := lookup(t, tc.url)
			if lk.URL != tc.normal || !slices.Equal(names(lk), tc.want) {
				t.Fatalf("lookup = %s %v, want %s %v", lk.URL, names(lk), tc.normal, tc.want)
			}
		})
	}
	c.get("/api/PageTopicMappings/lookup").expectProblem(t, 400, "url")
	c.get("/api/PageTopicMappings/lookup?url=%2Frelative").expectProblem(t, 400, "url")
	c.get("/api/PageTopicMappings/lookup?url=https://shop.example/%ff").expectProblem(t, 400, "url")
	c.get("/api/PageTopicMappings/LOOKUP?URL="+url.QueryEscape("https://shop.example/pricing")).expect(t, http.StatusOK, nil)

	var p pageOf[pageMappingJSON]
	c.get("/api/PageTopicMappings?matchType=exact").expect(t, http.StatusOK, &p)
	if p.TotalCount != 1 || p.Items[0] != exact {
		t.Fatalf("exact list: %+v", p)
	}
	c.get("/api/PageTopicMappings?topicId="+itoa(help.TopicID)).expect(t, http.StatusOK, &p)
	if p.TotalCount != 1 || p.Items[0] != root {
		t.Fatalf("topic list: %+v", p)
	}
	c.get("/api/PageTopicMappings?pageSize=2&pageNumber=2").expect(t, http.StatusOK, &p)
	if p.TotalCount != 4 || p.TotalPages != 2 || len(p.Items) != 2 {
		t.Fatalf("page 2: %+v", p)
	}
	c.get("/api/PageTopicMappings?matchType=fuzzy").expectProblem(t, 400, "matchType")
	c.get("/api/PageTopicMappings?topicId=nope").expectProblem(t, 400, "topicId")

	// PUT replaces topic, pattern and match type.
	c.put(path("/api/PageTopicMappings", exact.PageTopicMappingID), map[string]any{"topicID": billing.TopicID, "urlPattern": "https://shop.example/pricing/", "matchType": "prefix"}).
		expect(t, http.StatusNoContent, nil)
	var got pageMappingJSON
	c.get(path("/api/PageTopicMappings", exact.PageTopicMappingID)).expect(t, http.StatusOK, &got)
	if got != (pageMappingJSON{PageTopicMappingID: exact.PageTopicMappingID, TopicID: billing.TopicID, URLPattern: "https://shop.example/pricing/", MatchType: "prefix"}) {
		t.Fatalf("after PUT %+v", got)
	}
	if lk := lookup(t, "https://shop.example/pricing/eu"); !slices.Equal(names(lk), []string{"Billing"}) {
		t.Fatalf("after PUT lookup %v", names(lk))
	}
	c.put(path("/api/PageTopicMappings", exact.PageTopicMappingID), map[string]any{"topicID": billing.TopicID}).expectProblem(t, 400, "urlPattern", "matchType")
	c.put(path("/api/PageTopicMappings", exact.PageTopicMappingID), map[string]any{"topicID": billing.TopicID, "urlPattern": "https://shop.example/account/billing", "matchType": "prefix"}).
		expectProblem(t, 409, "urlPattern")
	c.del(path("/api/PageTopicMappings", exact.PageTopicMappingID)).expect(t, http.StatusNoContent, nil)
	c.get(path("/api/PageTopicMappings", exact.PageTopicMappingID)).expectProblem(t, 404)
	c.del(path("/api/PageTopicMappings", exact.PageTopicMappingID)).expectProblem(t, 404)
	c.get("/api/PageTopicMappings/0").expectProblem(t, 400, "id")
}

// testTopicDeletion checks that a deleted topic matches nothing: its
// mappings are invisible everywhere, the RPC lookups return nothing, and
// topic.deleted is published.
func testTopicDeletion(t *testing.T, s *service) {
	c := s.newCustomer(t)
	tp := c.createTopic("Doomed", "soon gone")
	keep := c.createTopic("Kept", "")
	act := c.createAction("act", "hook", nil, true)
	doc := c.createDocument("doc", nil, "", false)
	ta := c.mapAction(tp.TopicID, act.ActionID, 1, true)
	kta := c.mapAction(keep.TopicID, act.ActionID, 1, true)
	td := c.mapDocument(tp.TopicID, doc.DocumentID, 10)
	pm := c.mapPage(tp.TopicID, "https://doomed.example/", "prefix")
	var who topicJSON
	c.get(path("/api/Topics", tp.TopicID)).expect(t, http.StatusOK, &who)

	nc, err := nats.Connect(s.natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	rpc := func(subject string, req, reply any) {
		t.Helper()
		body, _ := json.Marshal(req)
		msg, err := nc.Request(contracts.Names{Prefix: s.natsPrefix}.Subject(subject), body, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var env struct {
			Data  json.RawMessage `json:"data"`
			Error any             `json:"error"`
		}
		if err := json.Unmarshal(msg.Data, &env); err != nil || env.Error != nil {
			t.Fatalf("reply %s: %v", msg.Data, err)
		}
		if err := json.Unmarshal(env.Data, reply); err != nil {
			t.Fatal(err)
		}
	}
	var acts contracts.TopicActionsReply
	rpc(contracts.RPCTopicActions, contracts.TopicActionsRequest{CustomerID: who.CustomerID, TopicID: tp.TopicID}, &acts)
	if len(acts.Actions) != 1 {
		t.Fatalf("before delete: %+v", acts)
	}

	c.del(path("/api/Topics", tp.TopicID)).expect(t, http.StatusNoContent, nil)

	c.get(path("/api/TopicActions", ta.TopicActionID)).expectProblem(t, 404)
	c.put(path("/api/TopicActions", ta.TopicActionID), map[string]any{"priority": 3}).expectProblem(t, 404)
	c.del(path("/api/TopicActions", ta.TopicActionID)).expectProblem(t, 404)
	c.get(path("/api/TopicDocuments", td.TopicDocumentID)).expectProblem(t, 404)
	c.get(path("/api/PageTopicMappings", pm.PageTopicMappingID)).expectProblem(t, 404)
	var p pageOf[topicActionJSON]
	c.get("/api/TopicActions").expect(t, http.StatusOK, &p)
	if p.TotalCount != 1 || p.Items[0] != kta {
		t.Fatalf("actions list after delete: %+v", p)
	}
	var pd pageOf[topicDocumentJSON]
	c.get("/api/TopicDocuments").expect(t, http.StatusOK, &pd)
	if pd.TotalCount != 0 {
		t.Fatalf("documents list after delete: %+v", pd)
	}
	var lk lookupJSON
	c.get("/api/PageTopicMappings/lookup?url="+url.QueryEscape("https://doomed.example/page")).expect(t, http.StatusOK, &lk)
	if len(lk.Topics) != 0 {
		t.Fatalf("lookup after delete: %+v", lk)
	}
	var tl pageOf[topicJSON]
	c.get("/api/Topics").expect(t, http.StatusOK, &tl)
	if tl.TotalCount != 1 || tl.Items[0].TopicID != keep.TopicID {
		t.Fatalf("topics after delete: %+v", tl)
	}
	// No new mapping to the deleted topic.
	c.post("/api/TopicActions", map[string]any{"topicID": tp.TopicID, "actionID": act.ActionID, "priority": 2}).expectProblem(t, 400, "topicID")
	c.post("/api/TopicDocuments", map[string]any{"topicID": tp.TopicID, "documentID": doc.DocumentID, "relevanceScore": 2}).expectProblem(t, 400, "topicID")
	c.post("/api/PageTopicMappings", map[string]any{"topicID": tp.TopicID, "urlPattern": "https://x.example/", "matchType": "exact"}).expectProblem(t, 400, "topicID")

	// RPC lookups return nothing for it.
	rpc(contracts.RPCTopicActions, contracts.TopicActionsRequest{CustomerID: who.CustomerID, TopicID: tp.TopicID}, &acts)
	if len(acts.Actions) != 0 {
		t.Fatalf("actions after delete: %+v", acts)
	}
	var docs contracts.TopicDocumentsReply
	rpc(contracts.RPCTopicDocuments, contracts.TopicDocumentsRequest{CustomerID: who.CustomerID, TopicIDs: []int64{tp.TopicID}}, &docs)
	if len(docs.Documents) != 0 {
		t.Fatalf("documents after delete: %+v", docs)
	}
	var names contracts.TopicNamesReply
	rpc(contracts.RPCTopicNames, contracts.TopicNamesRequest{CustomerID: who.CustomerID, TopicIDs: []int64{tp.TopicID, keep.TopicID}}, &names)
	if len(names.Names) != 1 || names.Names[keep.TopicID] != "Kept" {
		t.Fatalf("names after delete: %+v", names)
	}

	// topic.deleted was published on the EVENTS stream.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	names2 := contracts.Names{Prefix: s.natsPrefix}
	cons, err := js.OrderedConsumer(ctx, names2.Stream(contracts.StreamEvents), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{names2.Subject(contracts.EventSubject(contracts.EventTopicDeleted))},
	})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	batch, err := cons.FetchNoWait(1000)
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		var ev contracts.Event[contracts.TopicChanged]
		if err := json.Unmarshal(m.Data(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Data.TopicID == tp.TopicID && ev.CustomerID == who.CustomerID && ev.Data.Name == "Doomed" && ev.Type == contracts.EventTopicDeleted {
			found = true
		}
	}
	if !found {
		t.Fatal("no topic.deleted event for the topic")
	}

	// The name is free again, and the new topic has a new id.
	again := c.createTopic("doomed", "")
	if again.TopicID == tp.TopicID {
		t.Fatal("id reused")
	}
}

func testActionsAndDocuments(t *testing.T, s *service) {
	c := s.newCustomer(t)
	resp := c.post("/api/Actions", map[string]any{"name": " Notify ", "hookName": "slack", "channelID": 4})
	var a actionJSON
	resp.expect(t, http.StatusCreated, &a)
	wantKeys(t, resp.body, "actionID", "customerID", "name", "hookName", "channelID", "isActive")
	if a.Name != "Notify" || !a.IsActive || a.ChannelID == nil || *a.ChannelID != 4 || resp.header.Get("Location") != path("/api/Actions", a.ActionID) {
		t.Fatalf("created %+v", a)
	}
	c.post("/api/Actions", `{}`).expectProblem(t, 400, "name", "hookName")
	c.post("/api/Actions", map[string]any{"name": "x", "hookName": "y", "channelID": 0}).expectProblem(t, 400, "channelID")
	c.post("/api/Actions", `{"name":"x","hookName":"y","isActive":"no"}`).expectProblem(t, 400, "isActive")

	c.put(path("/api/Actions", a.ActionID), map[string]any{"name": "Notify team", "hookName": "slack", "isActive": false}).expect(t, http.StatusNoContent, nil)
	var got actionJSON
	r := c.get(path("/api/Actions", a.ActionID)).expect(t, http.StatusOK, &got)
	if got.Name != "Notify team" || got.IsActive || got.ChannelID != nil || !strings.Contains(string(r.body), `"channelID":null`) {
		t.Fatalf("after PUT %s", r.body)
	}
	c.put(path("/api/Actions", a.ActionID), map[string]any{"name": ""}).expectProblem(t, 400, "name", "hookName")
	var pa pageOf[actionJSON]
	c.get("/api/Actions?pageSize=100").expect(t, http.StatusOK, &pa)
	if pa.TotalCount != 1 || jsonStr(pa.Items[0]) != jsonStr(got) {
		t.Fatalf("actions list %+v", pa)
	}

	resp = c.post("/api/Documents", map[string]any{"title": "Returns policy", "content": "Line 1\nLine 2"})
	var d documentJSON
	resp.expect(t, http.StatusCreated, &d)
	wantKeys(t, resp.body, "documentID", "customerID", "title", "content", "channelID", "hookName", "isHook")
	if d.Title != "Returns policy" || d.Content != "Line 1\nLine 2" || d.IsHook || d.HookName != "" || resp.header.Get("Location") != path("/api/Documents", d.DocumentID) {
		t.Fatalf("created %+v", d)
	}
	c.post("/api/Documents", map[string]any{"title": "Live", "isHook": true}).expectProblem(t, 400, "hookName")
	c.post("/api/Documents", map[string]any{"content": "x"}).expectProblem(t, 400, "title")
	c.put(path("/api/Documents", d.DocumentID), map[string]any{"title": "Returns", "content": "new", "hookName": "Orders", "isHook": true, "channelID": 2}).
		expect(t, http.StatusNoContent, nil)
	var gd documentJSON
	c.get(path("/api/Documents", d.DocumentID)).expect(t, http.StatusOK, &gd)
	if gd.Title != "Returns" || !gd.IsHook || gd.HookName != "Orders" || *gd.ChannelID != 2 {
		t.Fatalf("after PUT %+v", gd)
	}
	var pdocs pageOf[documentJSON]
	c.get("/api/Documents").expect(t, http.StatusOK, &pdocs)
	if pdocs.TotalCount != 1 || jsonStr(pdocs.Items[0]) != jsonStr(gd) {
		t.Fatalf("documents list %+v", pdocs)
	}

	// Deleting an action or a document deletes its mappings.
	tp := c.createTopic("t", "")
	ta := c.mapAction(tp.TopicID, a.ActionID, 1, true)
	td := c.mapDocument(tp.TopicID, d.DocumentID, 1)
	c.del(path("/api/Actions", a.ActionID)).expect(t, http.StatusNoContent, nil)
	c.get(path("/api/Actions", a.ActionID)).expectProblem(t, 404)
	c.get(path("/api/TopicActions", ta.TopicActionID)).expectProblem(t, 404)
	c.del(path("/api/Documents", d.DocumentID)).expect(t, http.StatusNoContent, nil)
	c.get(path("/api/Documents", d.DocumentID)).expectProblem(t, 404)
	c.get(path("/api/TopicDocuments", td.TopicDocumentID)).expectProblem(t, 404)
	c.del(path("/api/Documents", d.DocumentID)).expectProblem(t, 404)
	for _, base := range []string{"/api/Actions", "/api/Documents"} {
		c.get(base+"/abc").expectProblem(t, 400, "id")
		c.get(base+"?pageSize=0").expectProblem(t, 400, "pageSize")
	}
}

func testRequestHandling(t *testing.T, s *service) {
	c := s.newCustomer(t)
	tp := c.createTopic("Case", "")
	// Paths are case-insensitive.
	var got topicJSON
	c.get(path("/API/topics", tp.TopicID)).expect(t, http.StatusOK, &got)
	c.get("/api/topicactions?TOPICID="+itoa(tp.TopicID)).expect(t, http.StatusOK, nil)
	c.post("/api/topicActions/BULK", `[]`).expectProblem(t, 400, "items")
	// Unknown routes and methods.
	off := c.undocumented()
	off.get("/api/Topics/1/extra").expectProblem(t, http.StatusNotFound)
	off.do(http.MethodPatch, path("/api/Topics", tp.TopicID), `{}`).expectProblem(t, http.StatusMethodNotAllowed)
	off.do(http.MethodDelete, "/api/Topics", nil).expectProblem(t, http.StatusMethodNotAllowed)
	// Oversized body.
	c.post("/api/Documents", map[string]any{"title": "big", "content": strings.Repeat("x", 2<<20)}).expectProblem(t, http.StatusRequestEntityTooLarge)
	// A request id is echoed and appears in problems.
	r := c.get("/api/Topics/0")
	p := r.expectProblem(t, 400, "id")
	if r.header.Get("X-Request-Id") == "" || p.RequestID != r.header.Get("X-Request-Id") || p.Instance != "/api/Topics/0" {
		t.Fatalf("request id %q, problem %+v", r.header.Get("X-Request-Id"), p)
	}
}
