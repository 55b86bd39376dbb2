package e2e

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/nats-io/nats.go"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
)

// The topics service through the gateway: topics, topic actions (bulk
// included), topic documents, page-topic mappings and their lookup, actions
// and documents. Helpers are in topics_helpers_test.go.

// Every topics route refuses a request without a valid bearer token, with
// a 401 problem and a WWW-Authenticate challenge.
func TestTopicsRoutesRequireToken(t *testing.T) {
	t.Parallel()
	routes := []struct{ method, path string }{
		{"GET", "/api/Topics"}, {"POST", "/api/Topics"},
		{"GET", "/api/Topics/1"}, {"PUT", "/api/Topics/1"}, {"DELETE", "/api/Topics/1"},
		{"GET", "/api/TopicActions"}, {"POST", "/api/TopicActions"}, {"POST", "/api/TopicActions/bulk"},
		{"GET", "/api/TopicActions/1"}, {"PUT", "/api/TopicActions/1"}, {"DELETE", "/api/TopicActions/1"},
		{"GET", "/api/TopicDocuments"}, {"POST", "/api/TopicDocuments"},
		{"GET", "/api/TopicDocuments/1"}, {"PUT", "/api/TopicDocuments/1"}, {"DELETE", "/api/TopicDocuments/1"},
		{"GET", "/api/PageTopicMappings"}, {"POST", "/api/PageTopicMappings"},
		{"GET", "/api/PageTopicMappings/lookup?url=https%3A%2F%2Fshop.example%2F"},
		{"GET", "/api/PageTopicMappings/1"}, {"PUT", "/api/PageTopicMappings/1"}, {"DELETE", "/api/PageTopicMappings/1"},
		{"GET", "/api/Actions"}, {"POST", "/api/Actions"},
		{"GET", "/api/Actions/1"}, {"PUT", "/api/Actions/1"}, {"DELETE", "/api/Actions/1"},
		{"GET", "/api/Documents"}, {"POST", "/api/Documents"},
		{"GET", "/api/Documents/1"}, {"PUT", "/api/Documents/1"}, {"DELETE", "/api/Documents/1"},
		{"GET", "/API/TOPICS"}, {"POST", "/api/topicactions/BULK"},
	}
	for _, rt := range routes {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			for _, auth := range []string{"", "Bearer not.a.token", "Basic dXNlcjpwdw=="} {
				body := ""
				if rt.method == http.MethodPost || rt.method == http.MethodPut {
					body = `{"name":"unauthorised"}`
				}
				req, err := http.NewRequestWithContext(t.Context(), rt.method, stk.HTTPSURL+rt.path, strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				r := client(t).DoRequest(req)
				wantProblem(t, r, http.StatusUnauthorized)
				if r.Header.Get("WWW-Authenticate") == "" {
					t.Fatalf("Authorization %q: no WWW-Authenticate challenge", auth)
				}
			}
		})
	}
}

func TestTopicsCRUD(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	a := tn.on(t)
	name := "Billing " + randid.Hex(4)

	// Create: name and description are trimmed; 201 with the topic and its Location.
	r := a.post(topicsPath, map[string]any{"name": "  " + name + "\t", "description": " Invoices and payments \n"})
	var tp topicBody
	wantOK(t, r, http.StatusCreated, &tp)
	wantLocation(t, r, topicsPath, tp.TopicID)
	if tp.Name != name || tp.Description != "Invoices and payments" || tp.CustomerID != tn.customerID {
		t.Fatalf("created %+v (customer %d)", tp, tn.customerID)
	}
	if got := getAs[topicBody](a, r.Header.Get("Location")); got != tp {
		t.Fatalf("GET Location = %+v, want %+v", got, tp)
	}

	// The description is optional.
	var bare topicBody
	wantOK(t, a.post(topicsPath, map[string]any{"name": "Bare " + randid.Hex(4)}), http.StatusCreated, &bare)
	if bare.Description != "" || getAs[topicBody](a, at(topicsPath, bare.TopicID)) != bare {
		t.Fatalf("bare topic %+v", bare)
	}

	// PUT replaces both fields: a missing description becomes empty.
	renamed := name + " & invoices"
	wantOK(t, a.put(at(topicsPath, tp.TopicID), map[string]any{"name": renamed}), http.StatusNoContent, nil)
	want := topicBody{TopicID: tp.TopicID, CustomerID: tn.customerID, Name: renamed}
	if got := getAs[topicBody](a, at(topicsPath, tp.TopicID)); got != want {
		t.Fatalf("after PUT %+v, want %+v", got, want)
	}
	// Its own name in another case is not a conflict with itself.
	wantOK(t, a.put(at(topicsPath, tp.TopicID), map[string]any{"name": strings.ToUpper(renamed), "description": "d"}), http.StatusNoContent, nil)
	want.Name, want.Description = strings.ToUpper(renamed), "d"
	if got := getAs[topicBody](a, at(topicsPath, tp.TopicID)); got != want {
		t.Fatalf("after PUT %+v, want %+v", got, want)
	}

	// Names are unique per customer ignoring case and outer spaces: 409 naming the field.
	wantProblem(t, a.post(topicsPath, map[string]any{"name": "  " + strings.ToLower(renamed) + " "}), http.StatusConflict, "name")
	wantProblem(t, a.put(at(topicsPath, bare.TopicID), map[string]any{"name": renamed}), http.StatusConflict, "name")
	if got := getAs[topicBody](a, at(topicsPath, bare.TopicID)); got != bare {
		t.Fatalf("a refused rename changed the topic: %+v", got)
	}
	accented := a.createTopic("Émile Zola "+randid.Hex(3), "")
	wantProblem(t, a.post(topicsPath, map[string]any{"name": strings.ToUpper(accented.Name)}), http.StatusConflict, "name")
	wantIDs(t, "topics", idsOf[topicBody](a, topicsPath), []int64{tp.TopicID, bare.TopicID, accented.TopicID})

	// DELETE: 204 without a body, then the topic is gone for every method.
	wantOK(t, a.del(at(topicsPath, tp.TopicID)), http.StatusNoContent, nil)
	wantProblem(t, a.get(at(topicsPath, tp.TopicID)), http.StatusNotFound)
	wantProblem(t, a.put(at(topicsPath, tp.TopicID), map[string]any{"name": "Back " + randid.Hex(3)}), http.StatusNotFound)
	wantProblem(t, a.del(at(topicsPath, tp.TopicID)), http.StatusNotFound)
	wantIDs(t, "topics after delete", idsOf[topicBody](a, topicsPath), []int64{bare.TopicID, accented.TopicID})

	// Ids nobody has, and ids that are not positive integers.
	wantProblem(t, a.get(at(topicsPath, missingID)), http.StatusNotFound)
	wantProblem(t, a.put(at(topicsPath, missingID), map[string]any{"name": "Nobody " + randid.Hex(3)}), http.StatusNotFound)
	wantProblem(t, a.del(at(topicsPath, missingID)), http.StatusNotFound)
	for _, id := range []string{"abc", "0", "-1", "1.5", "1e3", "99999999999999999999", "%20"} {
		wantProblem(t, a.get(topicsPath+"/"+id), http.StatusBadRequest, "id")
		wantProblem(t, a.put(topicsPath+"/"+id, map[string]any{"name": "x"}), http.StatusBadRequest, "id")
		wantProblem(t, a.del(topicsPath+"/"+id), http.StatusBadRequest, "id")
	}
}

func TestTopicsValidation(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	a := tn.on(t)
	existing := a.createTopic("Returns "+randid.Hex(3), "kept as is")

	cases := []struct {
		name   string
		body   any
		fields []string
	}{
		{"missing name", `{"description":"d"}`, []string{"name"}},
		{"empty name", map[string]any{"name": ""}, []string{"name"}},
		{"blank name", map[string]any{"name": " \t  "}, []string{"name"}},
		{"null name", `{"name":null}`, []string{"name"}},
		{"name of 201 characters", map[string]any{"name": strings.Repeat("n", 201)}, []string{"name"}},
		{"name with a newline", map[string]any{"name": "two\nlines"}, []string{"name"}},
		{"name with a control character", map[string]any{"name": "bell\u0007"}, []string{"name"}},
		{"name with NUL", map[string]any{"name": "nul\u0000"}, []string{"name"}},
		{"name is a number", `{"name":5}`, []string{"name"}},
		{"name is an object", `{"name":{"text":"x"}}`, []string{"name"}},
		{"description of 2001 characters", map[string]any{"name": "ok", "description": strings.Repeat("d", 2001)}, []string{"description"}},
		{"description is an array", `{"name":"ok","description":["a"]}`, []string{"description"}},
		{"description with NUL", map[string]any{"name": "ok", "description": "a\u0000b"}, []string{"description"}},
		{"both invalid", map[string]any{"name": "", "description": strings.Repeat("d", 2001)}, []string{"name", "description"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := tn.on(t)
			wantProblem(t, a.post(topicsPath, tc.body), http.StatusBadRequest, tc.fields...)
			wantProblem(t, a.put(at(topicsPath, existing.TopicID), tc.body), http.StatusBadRequest, tc.fields...)
		})
	}
	if got := getAs[topicBody](a, at(topicsPath, existing.TopicID)); got != existing {
		t.Fatalf("refused PUTs changed the topic: %+v, want %+v", got, existing)
	}
	wantIDs(t, "topics after refused POSTs", idsOf[topicBody](a, topicsPath), []int64{existing.TopicID})

	// The bounds themselves are accepted: 200 characters once trimmed (not
	// bytes), 2000 characters of multi-line description.
	long := strings.Repeat("é", 194) + randid.Hex(3)
	desc := strings.Repeat("line\n", 398) + "tab\tend" + "abc"
	tp := a.createTopic("  "+long+"  ", desc)
	if tp.Name != long || tp.Description != desc || len([]rune(tp.Name)) != 200 || len([]rune(desc)) != 2000 {
		t.Fatalf("bounds: %q (%d characters) / %d characters", tp.Name, len([]rune(tp.Name)), len([]rune(tp.Description)))
	}
	wantOK(t, a.put(at(topicsPath, tp.TopicID), map[string]any{"name": long, "description": strings.Repeat("d", 2000)}), http.StatusNoContent, nil)
	if got := getAs[topicBody](a, at(topicsPath, tp.TopicID)); got.Description != strings.Repeat("d", 2000) {
		t.Fatalf("2000-character description: %d characters", len(got.Description))
	}
}

func TestTopicsListPagingFilterSort(t *testing.T) {
	t.Parallel()
	a := newTenant(t).on(t)
	sfx := randid.Hex(3)
	var created []topicBody
	for i := 1; i <= 25; i++ {
		created = append(created, a.createTopic(fmt.Sprintf("Topic %02d %s", i, sfx), ""))
	}
	apple := a.createTopic("apple pie "+sfx, "")
	banana := a.createTopic("Banana split "+sfx, "")
	all := append(slices.Clone(created), apple, banana)
	allIDs := keysOf(all)

	// Paging (in id order by default): last page, past the end, pageSize=100,
	// out-of-range and malformed parameters.
	checkPaging[topicBody](t, a, topicsPath, allIDs)
	first := listOf[topicBody](a, topicsPath)
	if first.TotalCount != 27 || first.TotalPages != 2 || !slices.Equal(keysOf(first.Items), allIDs[:20]) {
		t.Fatalf("default page: %d of %d in %d pages", len(first.Items), first.TotalCount, first.TotalPages)
	}
	last := listOf[topicBody](a, topicsPath+"?pageNumber=2")
	if !slices.Equal(keysOf(last.Items), allIDs[20:]) || last.TotalPages != 2 {
		t.Fatalf("last page: %v", keysOf(last.Items))
	}

	// Sorting: by name ignoring case, descending, by id either way.
	byName := slices.Clone(all)
	sort.SliceStable(byName, func(i, j int) bool { return strings.ToLower(byName[i].Name) < strings.ToLower(byName[j].Name) })
	nameIDs := keysOf(byName)
	if nameIDs[0] != apple.TopicID || nameIDs[1] != banana.TopicID {
		t.Fatalf("test setup: name order %v", nameIDs)
	}
	reversed := func(ids []int64) []int64 { r := slices.Clone(ids); slices.Reverse(r); return r }
	for _, tc := range []struct {
		sort string
		want []int64
	}{
		{"name", nameIDs},
		{"-name", reversed(nameIDs)},
		{"topicID", allIDs},
		{"topicId", allIDs},
		{"-topicID", reversed(allIDs)},
	} {
		wantIDs(t, "sort="+tc.sort, idsOf[topicBody](a, topicsPath+"?pageSize=100&sort="+tc.sort), tc.want)
	}
	// Sorting applies before paging.
	p := listOf[topicBody](a, topicsPath+"?sort=-name&pageSize=2&pageNumber=2")
	wantIDs(t, "sort=-name page 2", keysOf(p.Items), reversed(nameIDs)[2:4])
	for _, bad := range []string{"description", "-", "name,topicID", "customerID", "+name", "--name"} {
		wantProblem(t, a.get(topicsPath+"?sort="+url.QueryEscape(bad)), http.StatusBadRequest, "sort")
	}
	wantProblem(t, a.get(topicsPath+"?sort=size&pageSize=0"), http.StatusBadRequest, "sort", "pageSize")

	// The name filter: a substring ignoring case, % and _ taken literally.
	for _, tc := range []struct {
		query string
		want  []int64
	}{
		{"name=" + url.QueryEscape("TOPIC 1"), keysOf(created[9:19])},
		{"name=PIE", []int64{apple.TopicID}},
		{"NAME=pie", []int64{apple.TopicID}}, // parameter names are matched ignoring case
		{"name=" + url.QueryEscape("split "+sfx), []int64{banana.TopicID}},
		{"name=" + url.QueryEscape("%"), nil},
		{"name=_", nil},
		{"name=" + url.QueryEscape("   "), allIDs}, // blank = no filter
		{"name=nothing-like-this", nil},
		{"name=" + strings.Repeat("n", 200), nil},
	} {
		wantIDs(t, tc.query, idsOf[topicBody](a, topicsPath+"?pageSize=100&"+tc.query), tc.want)
	}
	// Filter, sort and paging together: the 25 "Topic" names by name
	// descending, last page of 5.
	p = listOf[topicBody](a, topicsPath+"?name=topic&sort=-name&pageSize=5&pageNumber=5")
	if p.TotalCount != 25 || p.TotalPages != 5 {
		t.Fatalf("filtered page: total %d pages %d", p.TotalCount, p.TotalPages)
	}
	wantIDs(t, "filtered, sorted, last page", keysOf(p.Items), reversed(keysOf(created[:5])))
	wantProblem(t, a.get(topicsPath+"?name="+strings.Repeat("n", 201)), http.StatusBadRequest, "name")
	wantProblem(t, a.get(topicsPath+"?name=a%00b"), http.StatusBadRequest, "name")
}

func TestTopicActions(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	a := tn.on(t)
	sfx := randid.Hex(3)
	t1 := a.createTopic("Payments "+sfx, "")
	t2 := a.createTopic("Delivery "+sfx, "")
	slack := a.createAction("Notify "+sfx, "Slack", ptr[int64](7), true)
	pager := a.createAction("Escalate "+sfx, "pager", nil, true)
	mail := a.createAction("Mail "+sfx, "slack", ptr[int64](8), true)
	extra := a.createAction("Extra "+sfx, "slack-extra", ptr[int64](7), false)

	// Create: 201 with the mapping and its Location.
	r := a.post(topicActionsPath, map[string]any{"topicID": t1.TopicID, "actionID": slack.ActionID, "priority": 30, "isActive": true})
	var m1 topicActionBody
	wantOK(t, r, http.StatusCreated, &m1)
	wantLocation(t, r, topicActionsPath, m1.TopicActionID)
	if m1 != (topicActionBody{TopicActionID: m1.TopicActionID, TopicID: t1.TopicID, ActionID: slack.ActionID, Priority: 30, IsActive: true}) {
		t.Fatalf("created %+v", m1)
	}
	if got := getAs[topicActionBody](a, r.Header.Get("Location")); got != m1 {
		t.Fatalf("GET Location = %+v, want %+v", got, m1)
	}
	// isActive defaults to true; 0 and 10000 are valid priorities.
	var m2 topicActionBody
	wantOK(t, a.post(topicActionsPath, map[string]any{"topicID": t1.TopicID, "actionID": pager.ActionID, "priority": 0}), http.StatusCreated, &m2)
	if !m2.IsActive || m2.Priority != 0 {
		t.Fatalf("defaults: %+v", m2)
	}
	m3 := a.mapAction(t1.TopicID, mail.ActionID, 10, false)
	m4 := a.mapAction(t2.TopicID, slack.ActionID, 5, true)
	m5 := a.mapAction(t2.TopicID, extra.ActionID, 10000, true)
	all := []int64{m2.TopicActionID, m3.TopicActionID, m1.TopicActionID, m4.TopicActionID, m5.TopicActionID}

	for _, tc := range []struct {
		name   string
		body   any
		status int
		fields []string
	}{
		{"pair already mapped", map[string]any{"topicID": t1.TopicID, "actionID": slack.ActionID, "priority": 1, "isActive": false}, 409, []string{"actionID"}},
		{"empty object", `{}`, 400, []string{"topicID", "actionID", "priority"}},
		{"null priority", map[string]any{"topicID": t2.TopicID, "actionID": pager.ActionID, "priority": nil}, 400, []string{"priority"}},
		{"negative priority", map[string]any{"topicID": t2.TopicID, "actionID": pager.ActionID, "priority": -1}, 400, []string{"priority"}},
		{"priority 10001", map[string]any{"topicID": t2.TopicID, "actionID": pager.ActionID, "priority": 10001}, 400, []string{"priority"}},
		{"fractional priority", fmt.Sprintf(`{"topicID":%d,"actionID":%d,"priority":1.5}`, t2.TopicID, pager.ActionID), 400, []string{"priority"}},
		{"topicID as a string", fmt.Sprintf(`{"topicID":"%d","actionID":%d,"priority":1}`, t2.TopicID, pager.ActionID), 400, []string{"topicID"}},
		{"zero and negative ids", map[string]any{"topicID": 0, "actionID": -3, "priority": 1}, 400, []string{"topicID", "actionID"}},
		{"isActive as a string", fmt.Sprintf(`{"topicID":%d,"actionID":%d,"priority":1,"isActive":"yes"}`, t2.TopicID, pager.ActionID), 400, []string{"isActive"}},
		{"topic that does not exist", map[string]any{"topicID": missingID, "actionID": pager.ActionID, "priority": 1}, 400, []string{"topicID"}},
		{"action that does not exist", map[string]any{"topicID": t2.TopicID, "actionID": missingID, "priority": 1}, 400, []string{"actionID"}},
		{"neither exists", map[string]any{"topicID": missingID, "actionID": missingID, "priority": 1}, 400, []string{"topicID", "actionID"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, tn.on(t).post(topicActionsPath, tc.body), tc.status, tc.fields...)
		})
	}
	wantIDs(t, "mappings after refused POSTs", idsOf[topicActionBody](a, topicActionsPath), all)

	// Filters; lists are ordered by topic, then priority.
	for _, tc := range []struct {
		query string
		want  []topicActionBody
	}{
		{"", []topicActionBody{m2, m3, m1, m4, m5}},
		{"topicId=" + itoa(t1.TopicID), []topicActionBody{m2, m3, m1}},
		{"topicID=" + itoa(t2.TopicID), []topicActionBody{m4, m5}},
		{"TOPICID=" + itoa(t2.TopicID), []topicActionBody{m4, m5}},
		{"topicId=" + itoa(missingID), nil},
		{"actionId=" + itoa(slack.ActionID), []topicActionBody{m1, m4}},
		{"actionId=" + itoa(pager.ActionID) + "&topicId=" + itoa(t2.TopicID), nil},
		{"hookName=SLACK", []topicActionBody{m3, m1, m4}}, // the whole hook name, ignoring case
		{"hookName=slack-extra", []topicActionBody{m5}},
		{"hookName=" + url.QueryEscape(" pager "), []topicActionBody{m2}},
		{"hookName=nothing", nil},
		{"channelId=7", []topicActionBody{m1, m4, m5}},
		{"channelId=8", []topicActionBody{m3}},
		{"channelId=9", nil},
		{"isActive=false", []topicActionBody{m3}},
		{"isActive=true", []topicActionBody{m2, m1, m4, m5}},
		{"isActive=TRUE&topicId=" + itoa(t1.TopicID), []topicActionBody{m2, m1}},
		{"hookName=slack&channelId=7&isActive=true", []topicActionBody{m1, m4}},
	} {
		t.Run("filter "+tc.query, func(t *testing.T) {
			l := listOf[topicActionBody](tn.on(t), withQuery(topicActionsPath, tc.query))
			if l.TotalCount != len(tc.want) || !slices.Equal(l.Items, tc.want) {
				t.Fatalf("got %+v (total %d), want %+v", l.Items, l.TotalCount, tc.want)
			}
		})
	}
	for _, q := range []struct{ query, field string }{
		{"topicId=abc", "topicId"}, {"topicId=0", "topicId"}, {"actionId=-1", "actionId"},
		{"channelId=x", "channelId"}, {"channelId=0", "channelId"},
		{"isActive=maybe", "isActive"}, {"isActive=1", "isActive"},
		{"hookName=" + strings.Repeat("h", 201), "hookName"},
		{"hookName=%c3%28", "hookName"}, // invalid UTF-8
		{"hookName=a%00b", "hookName"},
	} {
		wantProblem(t, a.get(topicActionsPath+"?"+q.query), http.StatusBadRequest, q.field)
	}
	wantProblem(t, a.get(topicActionsPath+"?topicId=abc&isActive=maybe&pageSize=0"), http.StatusBadRequest, "topicId", "isActive", "pageSize")
	checkPaging[topicActionBody](t, a, topicActionsPath, all)
	checkPaging[topicActionBody](t, a, topicActionsPath+"?isActive=true", []int64{m2.TopicActionID, m1.TopicActionID, m4.TopicActionID, m5.TopicActionID})

	// PUT changes the priority only; every other field is ignored, even one
	// of the wrong type.
	wantOK(t, a.put(at(topicActionsPath, m1.TopicActionID), map[string]any{
		"priority": 1, "isActive": false, "topicID": t2.TopicID, "actionID": pager.ActionID, "topicActionID": m5.TopicActionID,
	}), http.StatusNoContent, nil)
	m1.Priority = 1
	if got := getAs[topicActionBody](a, at(topicActionsPath, m1.TopicActionID)); got != m1 {
		t.Fatalf("after PUT %+v, want %+v", got, m1)
	}
	wantIDs(t, "topic 1 after PUT", idsOf[topicActionBody](a, topicActionsPath+"?topicId="+itoa(t1.TopicID)),
		[]int64{m2.TopicActionID, m1.TopicActionID, m3.TopicActionID})
	wantOK(t, a.put(at(topicActionsPath, m1.TopicActionID), `{"priority":10000,"isActive":"no","topicID":"x"}`), http.StatusNoContent, nil)
	m1.Priority = 10000
	for _, body := range []any{`{}`, `{"isActive":false}`, `{"priority":null}`, `{"priority":10001}`, `{"priority":-1}`, `{"priority":"high"}`, `{"priority":2.5}`} {
		wantProblem(t, a.put(at(topicActionsPath, m1.TopicActionID), body), http.StatusBadRequest, "priority")
	}
	if got := getAs[topicActionBody](a, at(topicActionsPath, m1.TopicActionID)); got != m1 {
		t.Fatalf("after refused PUTs %+v, want %+v", got, m1)
	}
	wantProblem(t, a.put(at(topicActionsPath, missingID), map[string]any{"priority": 1}), http.StatusNotFound)

	// DELETE, after which the pair is free again.
	wantOK(t, a.del(at(topicActionsPath, m3.TopicActionID)), http.StatusNoContent, nil)
	wantProblem(t, a.get(at(topicActionsPath, m3.TopicActionID)), http.StatusNotFound)
	wantProblem(t, a.put(at(topicActionsPath, m3.TopicActionID), map[string]any{"priority": 1}), http.StatusNotFound)
	wantProblem(t, a.del(at(topicActionsPath, m3.TopicActionID)), http.StatusNotFound)
	again := a.mapAction(t1.TopicID, mail.ActionID, 10, true)
	if again.TopicActionID == m3.TopicActionID {
		t.Fatal("a deleted mapping's id was reused")
	}
	wantIDs(t, "topic 1 at the end", idsOf[topicActionBody](a, topicActionsPath+"?topicId="+itoa(t1.TopicID)),
		[]int64{m2.TopicActionID, again.TopicActionID, m1.TopicActionID})
	wantProblem(t, a.get(at(topicActionsPath, missingID)), http.StatusNotFound)
	wantProblem(t, a.del(at(topicActionsPath, missingID)), http.StatusNotFound)
	for _, id := range []string{"x", "0", "-5", "1.0"} {
		wantProblem(t, a.get(topicActionsPath+"/"+id), http.StatusBadRequest, "id")
		wantProblem(t, a.put(topicActionsPath+"/"+id, map[string]any{"priority": 1}), http.StatusBadRequest, "id")
		wantProblem(t, a.del(topicActionsPath+"/"+id), http.StatusBadRequest, "id")
	}
}

func TestTopicActionsBulk(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	a := tn.on(t)
	sfx := randid.Hex(3)
	tp := a.createTopic("Bulk "+sfx, "")
	other := a.createTopic("Bulk other "+sfx, "")
	var acts []actionBody
	for i := range 5 {
		acts = append(acts, a.createAction(fmt.Sprintf("Bulk action %d %s", i, sfx), "hook", nil, true))
	}
	item := func(topicID, actionID int64, priority int) map[string]any {
		return map[string]any{"topicID": topicID, "actionID": actionID, "priority": priority}
	}

	// The object form: 201 with the created mappings in request order.
	var out bulkBody
	wantOK(t, a.post(bulkPath, map[string]any{"items": []any{
		item(tp.TopicID, acts[0].ActionID, 2),
		map[string]any{"topicID": tp.TopicID, "actionID": acts[1].ActionID, "priority": 1, "isActive": false},
	}}), http.StatusCreated, &out)
	if len(out.Items) != 2 ||
		out.Items[0] != (topicActionBody{TopicActionID: out.Items[0].TopicActionID, TopicID: tp.TopicID, ActionID: acts[0].ActionID, Priority: 2, IsActive: true}) ||
		out.Items[1] != (topicActionBody{TopicActionID: out.Items[1].TopicActionID, TopicID: tp.TopicID, ActionID: acts[1].ActionID, Priority: 1, IsActive: false}) {
		t.Fatalf("bulk answered %+v", out.Items)
	}
	for _, m := range out.Items {
		if got := getAs[topicActionBody](a, at(topicActionsPath, m.TopicActionID)); got != m {
			t.Fatalf("stored %+v, answered %+v", got, m)
		}
	}
	created := keysOf(out.Items)
	// The bare-array form.
	wantOK(t, a.post(bulkPath, []any{item(other.TopicID, acts[0].ActionID, 1)}), http.StatusCreated, &out)
	if len(out.Items) != 1 || out.Items[0].TopicID != other.TopicID {
		t.Fatalf("array form answered %+v", out.Items)
	}
	created = append(created, out.Items[0].TopicActionID)
	// Listed by topic, then priority.
	wantIDs(t, "after the bulks", idsOf[topicActionBody](a, topicActionsPath), []int64{created[1], created[0], created[2]})

	// All or nothing: every failure below leaves the mappings as they were,
	// valid items of the request included, and names failing items by index.
	valid := fmt.Sprintf(`{"topicID":%d,"actionID":%d,"priority":1}`, tp.TopicID, acts[2].ActionID)
	failures := []struct {
		name   string
		body   any
		status int
		fields []string
	}{
		{"invalid priority in the last item", map[string]any{"items": []any{
			item(tp.TopicID, acts[2].ActionID, 1), item(tp.TopicID, acts[3].ActionID, 1), item(tp.TopicID, acts[4].ActionID, -1)}},
			400, []string{"items[2].priority"}},
		{"several invalid fields and items", []any{item(tp.TopicID, acts[2].ActionID, 1),
			map[string]any{"topicID": 0, "actionID": acts[3].ActionID, "priority": 10001}, map[string]any{"actionID": acts[4].ActionID}},
			400, []string{"items[1].topicID", "items[1].priority", "items[2].topicID", "items[2].priority"}},
		{"missing action and missing topic", []any{item(tp.TopicID, acts[2].ActionID, 1), item(tp.TopicID, missingID, 1), item(missingID, acts[3].ActionID, 1)},
			400, []string{"items[1].actionID", "items[2].topicID"}},
		{"pair already mapped", []any{item(tp.TopicID, acts[2].ActionID, 1), item(tp.TopicID, acts[0].ActionID, 7)},
			409, []string{"items[1].actionID"}},
		{"pair twice in the request", []any{item(tp.TopicID, acts[2].ActionID, 1), item(tp.TopicID, acts[3].ActionID, 1), item(tp.TopicID, acts[2].ActionID, 5)},
			400, []string{"items[2].actionID"}},
		{"wrong type in an item", `{"items":[` + valid + `,{"topicID":"x","actionID":1,"priority":1}]}`, 400, []string{"items[1].topicID"}},
		{"item that is not an object", `[` + valid + `, 7]`, 400, []string{"items[1]"}},
		{"null item", `[` + valid + `, null]`, 400, []string{"items[1]"}},
		{"empty item", `[{}]`, 400, []string{"items[0].topicID", "items[0].actionID", "items[0].priority"}},
		{"empty items", `{"items":[]}`, 400, []string{"items"}},
		{"empty array", `[]`, 400, []string{"items"}},
		{"no items key", `{"mappings":[` + valid + `]}`, 400, []string{"items"}},
		{"items is an object", `{"items":{}}`, 400, []string{"items"}},
		{"items is null", `{"items":null}`, 400, []string{"items"}},
		{"a string", `"items"`, 400, nil},
		{"null", `null`, 400, nil},
		{"malformed", `[` + valid + `,`, 400, nil},
	}
	check := func(t *testing.T) {
		t.Helper()
		a := tn.on(t)
		wantIDs(t, "mappings", idsOf[topicActionBody](a, topicActionsPath), []int64{created[1], created[0], created[2]})
		for _, act := range acts[2:] {
			wantIDs(t, "mappings of "+act.Name, idsOf[topicActionBody](a, topicActionsPath+"?actionId="+itoa(act.ActionID)), nil)
		}
	}
	for _, tc := range failures {
		t.Run(tc.name, func(t *testing.T) {
			wantClientError(t, tn.on(t).post(bulkPath, tc.body), tc.status, tc.fields...)
			check(t)
		})
	}
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", ""} {
		t.Run("content type "+ct, func(t *testing.T) {
			wantClientError(t, tn.on(t).raw(http.MethodPost, bulkPath, ct, `[`+valid+`]`), http.StatusUnsupportedMediaType)
			check(t)
		})
	}

	// At most 100 items: 101 is refused whole, exactly 100 pass.
	var many []any
	for i := range 101 {
		act := a.createAction(fmt.Sprintf("Many %d %s", i, sfx), "many", nil, true)
		many = append(many, item(other.TopicID, act.ActionID, i))
	}
	wantProblem(t, a.post(bulkPath, map[string]any{"items": many}), http.StatusBadRequest, "items")
	wantIDs(t, "after 101 items", idsOf[topicActionBody](a, topicActionsPath+"?topicId="+itoa(other.TopicID)), []int64{created[2]})
	wantOK(t, a.post(bulkPath, map[string]any{"items": many[:100]}), http.StatusCreated, &out)
	if len(out.Items) != 100 || out.Items[99].Priority != 99 {
		t.Fatalf("100 items: %d created", len(out.Items))
	}
	// 101 mappings of the topic now: a full page of 100 and a last page of 1.
	p := listOf[topicActionBody](a, topicActionsPath+"?topicId="+itoa(other.TopicID)+"&pageSize=100")
	if len(p.Items) != 100 || p.TotalCount != 101 || p.TotalPages != 2 {
		t.Fatalf("page 1: %d items, total %d, pages %d", len(p.Items), p.TotalCount, p.TotalPages)
	}
	p = listOf[topicActionBody](a, topicActionsPath+"?topicId="+itoa(other.TopicID)+"&pageSize=100&pageNumber=2")
	if len(p.Items) != 1 || p.Items[0] != out.Items[99] {
		t.Fatalf("last page: %+v", p.Items)
	}
}

func TestTopicDocuments(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	a := tn.on(t)
	sfx := randid.Hex(3)
	t1 := a.createTopic("Docs "+sfx, "")
	t2 := a.createTopic("Docs two "+sfx, "")
	faq := a.createDocument("FAQ "+sfx, ptr[int64](3), "", false)
	stock := a.createDocument("Stock "+sfx, nil, "StockLevel", true)
	terms := a.createDocument("Terms "+sfx, ptr[int64](3), "", false)
	live := a.createDocument("Live "+sfx, ptr[int64](4), "stocklevel-live", true)

	r := a.post(topicDocumentsPath, map[string]any{"topicID": t1.TopicID, "documentID": faq.DocumentID, "relevanceScore": 40})
	var m1 topicDocumentBody
	wantOK(t, r, http.StatusCreated, &m1)
	wantLocation(t, r, topicDocumentsPath, m1.TopicDocumentID)
	if m1 != (topicDocumentBody{TopicDocumentID: m1.TopicDocumentID, TopicID: t1.TopicID, DocumentID: faq.DocumentID, RelevanceScore: 40}) {
		t.Fatalf("created %+v", m1)
	}
	if got := getAs[topicDocumentBody](a, r.Header.Get("Location")); got != m1 {
		t.Fatalf("GET Location = %+v", got)
	}
	m2 := a.mapDocument(t1.TopicID, stock.DocumentID, 100)
	m3 := a.mapDocument(t2.TopicID, terms.DocumentID, 0)
	m4 := a.mapDocument(t2.TopicID, live.DocumentID, 50)
	all := []topicDocumentBody{m2, m1, m4, m3} // by topic, then relevance (highest first)

	for _, tc := range []struct {
		name   string
		body   any
		status int
		fields []string
	}{
		{"pair already linked", map[string]any{"topicID": t1.TopicID, "documentID": faq.DocumentID, "relevanceScore": 1}, 409, []string{"documentID"}},
		{"empty object", `{}`, 400, []string{"topicID", "documentID", "relevanceScore"}},
		{"score 101", map[string]any{"topicID": t2.TopicID, "documentID": faq.DocumentID, "relevanceScore": 101}, 400, []string{"relevanceScore"}},
		{"negative score", map[string]any{"topicID": t2.TopicID, "documentID": faq.DocumentID, "relevanceScore": -1}, 400, []string{"relevanceScore"}},
		{"score as a string", fmt.Sprintf(`{"topicID":%d,"documentID":%d,"relevanceScore":"high"}`, t2.TopicID, faq.DocumentID), 400, []string{"relevanceScore"}},
		{"fractional score", fmt.Sprintf(`{"topicID":%d,"documentID":%d,"relevanceScore":0.5}`, t2.TopicID, faq.DocumentID), 400, []string{"relevanceScore"}},
		{"documentID as a string", fmt.Sprintf(`{"topicID":%d,"documentID":"%d","relevanceScore":1}`, t2.TopicID, faq.DocumentID), 400, []string{"documentID"}},
		{"zero ids", map[string]any{"topicID": 0, "documentID": 0, "relevanceScore": 1}, 400, []string{"topicID", "documentID"}},
		{"document that does not exist", map[string]any{"topicID": t2.TopicID, "documentID": missingID, "relevanceScore": 1}, 400, []string{"documentID"}},
		{"topic that does not exist", map[string]any{"topicID": missingID, "documentID": faq.DocumentID, "relevanceScore": 1}, 400, []string{"topicID"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, tn.on(t).post(topicDocumentsPath, tc.body), tc.status, tc.fields...)
		})
	}
	wantIDs(t, "links after refused POSTs", idsOf[topicDocumentBody](a, topicDocumentsPath), keysOf(all))

	for _, tc := range []struct {
		query string
		want  []topicDocumentBody
	}{
		{"", all},
		{"topicId=" + itoa(t1.TopicID), []topicDocumentBody{m2, m1}},
		{"TopicID=" + itoa(t2.TopicID), []topicDocumentBody{m4, m3}},
		{"documentId=" + itoa(terms.DocumentID), []topicDocumentBody{m3}},
		{"documentId=" + itoa(terms.DocumentID) + "&topicId=" + itoa(t1.TopicID), nil},
		{"channelId=3", []topicDocumentBody{m1, m3}},
		{"channelId=4", []topicDocumentBody{m4}},
		{"channelId=5", nil},
		{"hookName=stocklevel", []topicDocumentBody{m2}}, // the whole hook name, ignoring case
		{"hookName=STOCKLEVEL-LIVE", []topicDocumentBody{m4}},
		{"hookName=stock", nil},
		{"isHook=true", []topicDocumentBody{m2, m4}},
		{"isHook=false", []topicDocumentBody{m1, m3}},
		{"isHook=false&channelId=3&topicId=" + itoa(t2.TopicID), []topicDocumentBody{m3}},
	} {
		t.Run("filter "+tc.query, func(t *testing.T) {
			l := listOf[topicDocumentBody](tn.on(t), withQuery(topicDocumentsPath, tc.query))
			if l.TotalCount != len(tc.want) || !slices.Equal(l.Items, tc.want) {
				t.Fatalf("got %+v (total %d), want %+v", l.Items, l.TotalCount, tc.want)
			}
		})
	}
	for _, q := range []struct{ query, field string }{
		{"topicId=x", "topicId"}, {"documentId=0", "documentId"}, {"channelId=-2", "channelId"},
		{"isHook=maybe", "isHook"}, {"isHook=yes", "isHook"}, {"hookName=" + strings.Repeat("h", 201), "hookName"},
		{"hookName=%fe", "hookName"}, {"hookName=%00", "hookName"},
	} {
		wantProblem(t, a.get(topicDocumentsPath+"?"+q.query), http.StatusBadRequest, q.field)
	}
	checkPaging[topicDocumentBody](t, a, topicDocumentsPath, keysOf(all))

	// PUT changes the relevance only; other fields are ignored.
	wantOK(t, a.put(at(topicDocumentsPath, m1.TopicDocumentID), map[string]any{
		"relevanceScore": 100, "topicID": t2.TopicID, "documentID": terms.DocumentID,
	}), http.StatusNoContent, nil)
	m1.RelevanceScore = 100
	if got := getAs[topicDocumentBody](a, at(topicDocumentsPath, m1.TopicDocumentID)); got != m1 {
		t.Fatalf("after PUT %+v, want %+v", got, m1)
	}
	// Equal relevance: the older link first.
	wantIDs(t, "topic 1 after PUT", idsOf[topicDocumentBody](a, topicDocumentsPath+"?topicId="+itoa(t1.TopicID)), []int64{m1.TopicDocumentID, m2.TopicDocumentID})
	for _, body := range []any{`{}`, `{"relevanceScore":null}`, `{"relevanceScore":101}`, `{"relevanceScore":-1}`, `{"relevanceScore":"x"}`} {
		wantProblem(t, a.put(at(topicDocumentsPath, m1.TopicDocumentID), body), http.StatusBadRequest, "relevanceScore")
	}
	if got := getAs[topicDocumentBody](a, at(topicDocumentsPath, m1.TopicDocumentID)); got != m1 {
		t.Fatalf("after refused PUTs %+v", got)
	}
	wantProblem(t, a.put(at(topicDocumentsPath, missingID), map[string]any{"relevanceScore": 1}), http.StatusNotFound)

	wantOK(t, a.del(at(topicDocumentsPath, m1.TopicDocumentID)), http.StatusNoContent, nil)
	wantProblem(t, a.get(at(topicDocumentsPath, m1.TopicDocumentID)), http.StatusNotFound)
	wantProblem(t, a.put(at(topicDocumentsPath, m1.TopicDocumentID), map[string]any{"relevanceScore": 1}), http.StatusNotFound)
	wantProblem(t, a.del(at(topicDocumentsPath, m1.TopicDocumentID)), http.StatusNotFound)
	wantIDs(t, "after DELETE", idsOf[topicDocumentBody](a, topicDocumentsPath), []int64{m2.TopicDocumentID, m4.TopicDocumentID, m3.TopicDocumentID})
	// The pair may be linked again.
	a.mapDocument(t1.TopicID, faq.DocumentID, 5)
	for _, id := range []string{"x", "0", "-1"} {
		wantProblem(t, a.get(topicDocumentsPath+"/"+id), http.StatusBadRequest, "id")
		wantProblem(t, a.put(topicDocumentsPath+"/"+id, map[string]any{"relevanceScore": 1}), http.StatusBadRequest, "id")
		wantProblem(t, a.del(topicDocumentsPath+"/"+id), http.StatusBadRequest, "id")
	}
}

func TestPageTopicMappings(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	a := tn.on(t)
	sfx := randid.Hex(3)
	help := a.createTopic("Help "+sfx, "")
	billing := a.createTopic("Billing "+sfx, "")
	invoices := a.createTopic("Invoices "+sfx, "")
	pricing := a.createTopic("Pricing "+sfx, "")

	// The pattern is stored normalised: lower-case scheme and host, no
	// default port, "/" for an empty path; the match type ignores case.
	r := a.post(pageMappingsPath, map[string]any{"topicID": help.TopicID, "urlPattern": "HTTPS://Shop.Example:443", "matchType": "Prefix"})
	var root pageMappingBody
	wantOK(t, r, http.StatusCreated, &root)
	wantLocation(t, r, pageMappingsPath, root.PageTopicMappingID)
	if root != (pageMappingBody{PageTopicMappingID: root.PageTopicMappingID, TopicID: help.TopicID, URLPattern: "https://shop.example/", MatchType: "prefix"}) {
		t.Fatalf("created %+v", root)
	}
	if got := getAs[pageMappingBody](a, r.Header.Get("Location")); got != root {
		t.Fatalf("GET Location = %+v", got)
	}
	bill := a.mapPage(billing.TopicID, "https://shop.example/account/billing", "prefix")
	inv := a.mapPage(invoices.TopicID, "https://shop.example/account/billing#section", "PREFIX")
	if inv.URLPattern != "https://shop.example/account/billing" || inv.MatchType != "prefix" {
		t.Fatalf("fragment not removed: %+v", inv)
	}
	exact := a.mapPage(pricing.TopicID, "https://shop.example/pricing", "exact")
	all := []int64{root.PageTopicMappingID, bill.PageTopicMappingID, inv.PageTopicMappingID, exact.PageTopicMappingID}

	for _, tc := range []struct {
		name   string
		body   any
		status int
		fields []string
	}{
		{"same topic, pattern and type once normalised", map[string]any{"topicID": pricing.TopicID, "urlPattern": "https://SHOP.example:443/pricing#x", "matchType": "EXACT"}, 409, []string{"urlPattern"}},
		{"empty object", `{}`, 400, []string{"topicID", "urlPattern", "matchType"}},
		{"relative URL", map[string]any{"topicID": help.TopicID, "urlPattern": "/help", "matchType": "exact"}, 400, []string{"urlPattern"}},
		{"ftp URL", map[string]any{"topicID": help.TopicID, "urlPattern": "ftp://shop.example/", "matchType": "exact"}, 400, []string{"urlPattern"}},
		{"URL with credentials", map[string]any{"topicID": help.TopicID, "urlPattern": "https://user:pw@shop.example/", "matchType": "exact"}, 400, []string{"urlPattern"}},
		{"URL without a host", map[string]any{"topicID": help.TopicID, "urlPattern": "https:///path", "matchType": "exact"}, 400, []string{"urlPattern"}},
		{"URL too long", map[string]any{"topicID": help.TopicID, "urlPattern": "https://shop.example/" + strings.Repeat("a", 2100), "matchType": "exact"}, 400, []string{"urlPattern"}},
		{"unknown match type", map[string]any{"topicID": help.TopicID, "urlPattern": "https://shop.example/x", "matchType": "regex"}, 400, []string{"matchType"}},
		{"topic that does not exist", map[string]any{"topicID": missingID, "urlPattern": "https://shop.example/x", "matchType": "exact"}, 400, []string{"topicID"}},
		{"topicID as a string", fmt.Sprintf(`{"topicID":"%d","urlPattern":"https://shop.example/x","matchType":"exact"}`, help.TopicID), 400, []string{"topicID"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, tn.on(t).post(pageMappingsPath, tc.body), tc.status, tc.fields...)
		})
	}
	// Another topic may map the same pattern, and the same topic the same
	// pattern with the other match type.
	for _, other := range []pageMappingBody{
		a.mapPage(invoices.TopicID, "https://shop.example/pricing", "exact"),
		a.mapPage(pricing.TopicID, "https://shop.example/pricing", "prefix"),
	} {
		wantOK(t, a.del(at(pageMappingsPath, other.PageTopicMappingID)), http.StatusNoContent, nil)
	}
	wantIDs(t, "mappings", idsOf[pageMappingBody](a, pageMappingsPath), all)

	// Lookup: exact mappings equal to the URL first, then the longest prefix
	// patterns it starts with; by topic id within each.
	for _, tc := range []struct {
		url, normal string
		want        []int64
	}{
		{"https://shop.example/account/billing/2024?page=2#top", "https://shop.example/account/billing/2024?page=2", []int64{billing.TopicID, invoices.TopicID}},
		{"https://shop.example/account/billingXYZ", "https://shop.example/account/billingXYZ", []int64{billing.TopicID, invoices.TopicID}},
		{"HTTPS://SHOP.EXAMPLE/account", "https://shop.example/account", []int64{help.TopicID}},
		{"https://shop.example/pricing#plans", "https://shop.example/pricing", []int64{pricing.TopicID, help.TopicID}},
		{"https://shop.example:443/pricing", "https://shop.example/pricing", []int64{pricing.TopicID, help.TopicID}},
		{"https://shop.example/pricing/eu", "https://shop.example/pricing/eu", []int64{help.TopicID}},
		{"https://shop.example/Pricing", "https://shop.example/Pricing", []int64{help.TopicID}}, // paths keep their case
		{"https://shop.example", "https://shop.example/", []int64{help.TopicID}},
		{"https://elsewhere.example", "https://elsewhere.example/", nil},
		{"http://shop.example/account", "http://shop.example/account", nil},
	} {
		t.Run("lookup "+tc.url, func(t *testing.T) {
			normal, ids := tn.on(t).lookup(tc.url)
			if normal != tc.normal {
				t.Fatalf("url %q, want %q", normal, tc.normal)
			}
			wantIDs(t, "topics", ids, tc.want)
		})
	}
	var lk lookupBody
	wantOK(t, a.get(lookupPath+"?url="+url.QueryEscape("https://shop.example/pricing")), http.StatusOK, &lk)
	if len(lk.Topics) != 2 || lk.Topics[0] != getAs[topicBody](a, at(topicsPath, pricing.TopicID)) {
		t.Fatalf("lookup answers whole topics: %+v", lk.Topics)
	}
	wantProblem(t, a.get(lookupPath), http.StatusBadRequest, "url")
	wantProblem(t, a.get(lookupPath+"?url="), http.StatusBadRequest, "url")
	wantProblem(t, a.get(lookupPath+"?url=%2Frelative"), http.StatusBadRequest, "url")
	wantProblem(t, a.get(lookupPath+"?url="+url.QueryEscape("mailto:help@shop.example")), http.StatusBadRequest, "url")
	wantProblem(t, a.get(lookupPath+"?url="+url.QueryEscape("https://shop.example/\x01")), http.StatusBadRequest, "url")
	wantProblem(t, a.get(lookupPath+"?url=https://shop.example/%ff"), http.StatusBadRequest, "url")
	wantProblem(t, a.get(lookupPath+"?url=https://shop.example/%00"), http.StatusBadRequest, "url")
	wantOK(t, a.get("/api/PageTopicMappings/LOOKUP?URL="+url.QueryEscape("https://shop.example/pricing")), http.StatusOK, &lk)
	if len(lk.Topics) != 2 {
		t.Fatalf("odd-cased lookup: %+v", lk)
	}

	// The list: in id order, filtered by topic and match type.
	for _, tc := range []struct {
		query string
		want  []int64
	}{
		{"matchType=exact", []int64{exact.PageTopicMappingID}},
		{"matchType=PREFIX", all[:3]},
		{"topicId=" + itoa(help.TopicID), []int64{root.PageTopicMappingID}},
		{"topicId=" + itoa(help.TopicID) + "&matchType=exact", nil},
		{"topicId=" + itoa(missingID), nil},
	} {
		wantIDs(t, tc.query, idsOf[pageMappingBody](a, pageMappingsPath+"?"+tc.query), tc.want)
	}
	wantProblem(t, a.get(pageMappingsPath+"?matchType=fuzzy"), http.StatusBadRequest, "matchType")
	wantProblem(t, a.get(pageMappingsPath+"?topicId=nope"), http.StatusBadRequest, "topicId")
	checkPaging[pageMappingBody](t, a, pageMappingsPath, all)

	// PUT replaces topic, pattern and match type.
	wantOK(t, a.put(at(pageMappingsPath, exact.PageTopicMappingID), map[string]any{"topicID": billing.TopicID, "urlPattern": "https://shop.example/pricing/", "matchType": "prefix"}), http.StatusNoContent, nil)
	exact = pageMappingBody{PageTopicMappingID: exact.PageTopicMappingID, TopicID: billing.TopicID, URLPattern: "https://shop.example/pricing/", MatchType: "prefix"}
	if got := getAs[pageMappingBody](a, at(pageMappingsPath, exact.PageTopicMappingID)); got != exact {
		t.Fatalf("after PUT %+v, want %+v", got, exact)
	}
	if _, ids := a.lookup("https://shop.example/pricing/eu"); !slices.Equal(ids, []int64{billing.TopicID}) {
		t.Fatalf("lookup after PUT: %v", ids)
	}
	if _, ids := a.lookup("https://shop.example/pricing"); !slices.Equal(ids, []int64{help.TopicID}) {
		t.Fatalf("the old exact mapping still matches: %v", ids)
	}
	// The same body again changes nothing and is no conflict with itself.
	wantOK(t, a.put(at(pageMappingsPath, exact.PageTopicMappingID), map[string]any{"topicID": billing.TopicID, "urlPattern": "https://shop.example/pricing/", "matchType": "prefix"}), http.StatusNoContent, nil)
	wantProblem(t, a.put(at(pageMappingsPath, exact.PageTopicMappingID), map[string]any{"topicID": billing.TopicID}), http.StatusBadRequest, "urlPattern", "matchType")
	wantProblem(t, a.put(at(pageMappingsPath, exact.PageTopicMappingID), map[string]any{"topicID": billing.TopicID, "urlPattern": "https://shop.example/account/billing", "matchType": "prefix"}), http.StatusConflict, "urlPattern")
	wantProblem(t, a.put(at(pageMappingsPath, exact.PageTopicMappingID), map[string]any{"topicID": missingID, "urlPattern": "https://shop.example/z", "matchType": "prefix"}), http.StatusBadRequest, "topicID")
	if got := getAs[pageMappingBody](a, at(pageMappingsPath, exact.PageTopicMappingID)); got != exact {
		t.Fatalf("after refused PUTs %+v", got)
	}
	wantProblem(t, a.put(at(pageMappingsPath, missingID), map[string]any{"topicID": help.TopicID, "urlPattern": "https://shop.example/z", "matchType": "exact"}), http.StatusNotFound)

	wantOK(t, a.del(at(pageMappingsPath, exact.PageTopicMappingID)), http.StatusNoContent, nil)
	wantProblem(t, a.get(at(pageMappingsPath, exact.PageTopicMappingID)), http.StatusNotFound)
	wantProblem(t, a.put(at(pageMappingsPath, exact.PageTopicMappingID), map[string]any{"topicID": help.TopicID, "urlPattern": "https://shop.example/z", "matchType": "exact"}), http.StatusNotFound)
	wantProblem(t, a.del(at(pageMappingsPath, exact.PageTopicMappingID)), http.StatusNotFound)
	if _, ids := a.lookup("https://shop.example/pricing/eu"); !slices.Equal(ids, []int64{help.TopicID}) {
		t.Fatalf("lookup after DELETE: %v", ids)
	}
	for _, id := range []string{"x", "0", "-1"} {
		wantProblem(t, a.get(pageMappingsPath+"/"+id), http.StatusBadRequest, "id")
		wantProblem(t, a.put(pageMappingsPath+"/"+id, map[string]any{"topicID": help.TopicID, "urlPattern": "https://a.example/", "matchType": "exact"}), http.StatusBadRequest, "id")
		wantProblem(t, a.del(pageMappingsPath+"/"+id), http.StatusBadRequest, "id")
	}
}

func TestActionsCRUD(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	a := tn.on(t)
	sfx := randid.Hex(3)

	r := a.post(actionsPath, map[string]any{"name": " Notify " + sfx + " ", "hookName": " slack ", "channelID": 4})
	var act actionBody
	wantOK(t, r, http.StatusCreated, &act)
	wantLocation(t, r, actionsPath, act.ActionID)
	if act.Name != "Notify "+sfx || act.HookName != "slack" || act.ChannelID == nil || *act.ChannelID != 4 || !act.IsActive || act.CustomerID != tn.customerID {
		t.Fatalf("created %s", r.Body)
	}
	if got := getAs[actionBody](a, r.Header.Get("Location")); !jsonEqual(got, act) {
		t.Fatalf("GET Location = %+v", got)
	}

	for _, tc := range []struct {
		name   string
		body   any
		fields []string
	}{
		{"empty object", `{}`, []string{"name", "hookName"}},
		{"blank name", map[string]any{"name": "  ", "hookName": "h"}, []string{"name"}},
		{"name of 201 characters", map[string]any{"name": strings.Repeat("n", 201), "hookName": "h"}, []string{"name"}},
		{"hookName of 201 characters", map[string]any{"name": "n", "hookName": strings.Repeat("h", 201)}, []string{"hookName"}},
		{"name with a newline", map[string]any{"name": "a\nb", "hookName": "h"}, []string{"name"}},
		{"channelID 0", map[string]any{"name": "n", "hookName": "h", "channelID": 0}, []string{"channelID"}},
		{"negative channelID", map[string]any{"name": "n", "hookName": "h", "channelID": -4}, []string{"channelID"}},
		{"channelID as a string", `{"name":"n","hookName":"h","channelID":"4"}`, []string{"channelID"}},
		{"isActive as a string", `{"name":"n","hookName":"h","isActive":"no"}`, []string{"isActive"}},
		{"name as a number", `{"name":1,"hookName":"h"}`, []string{"name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tn.on(t)
			wantProblem(t, a.post(actionsPath, tc.body), http.StatusBadRequest, tc.fields...)
			wantProblem(t, a.put(at(actionsPath, act.ActionID), tc.body), http.StatusBadRequest, tc.fields...)
		})
	}
	if got := getAs[actionBody](a, at(actionsPath, act.ActionID)); !jsonEqual(got, act) {
		t.Fatalf("refused PUTs changed the action: %+v", got)
	}

	// PUT replaces every field; a missing channel becomes null.
	wantOK(t, a.put(at(actionsPath, act.ActionID), map[string]any{"name": "Notify team " + sfx, "hookName": "teams", "isActive": false}), http.StatusNoContent, nil)
	r = a.get(at(actionsPath, act.ActionID))
	var got actionBody
	wantOK(t, r, http.StatusOK, &got)
	if got.Name != "Notify team "+sfx || got.HookName != "teams" || got.IsActive || got.ChannelID != nil || !strings.Contains(string(r.Body), `"channelID":null`) {
		t.Fatalf("after PUT %s", r.Body)
	}
	// Missing isActive takes its default (true).
	wantOK(t, a.put(at(actionsPath, act.ActionID), map[string]any{"name": "Notify team " + sfx, "hookName": "teams", "channelID": 9}), http.StatusNoContent, nil)
	got = getAs[actionBody](a, at(actionsPath, act.ActionID))
	if !got.IsActive || got.ChannelID == nil || *got.ChannelID != 9 {
		t.Fatalf("after second PUT %+v", got)
	}
	wantProblem(t, a.put(at(actionsPath, missingID), map[string]any{"name": "n", "hookName": "h"}), http.StatusNotFound)
	wantProblem(t, a.get(at(actionsPath, missingID)), http.StatusNotFound)

	// The list, in id order.
	second := a.createAction("Second "+sfx, "h2", nil, false)
	third := a.createAction("Third "+sfx, "h3", ptr[int64](1), true)
	checkPaging[actionBody](t, a, actionsPath, []int64{act.ActionID, second.ActionID, third.ActionID})
	l := listOf[actionBody](a, actionsPath)
	if !jsonEqual(l.Items[0], got) || !jsonEqual(l.Items[1], second) {
		t.Fatalf("listed %+v", l.Items)
	}

	// DELETE removes the action and its topic mappings.
	tp := a.createTopic("With action "+sfx, "")
	m := a.mapAction(tp.TopicID, act.ActionID, 1, true)
	keep := a.mapAction(tp.TopicID, second.ActionID, 2, true)
	wantOK(t, a.del(at(actionsPath, act.ActionID)), http.StatusNoContent, nil)
	wantProblem(t, a.get(at(actionsPath, act.ActionID)), http.StatusNotFound)
	wantProblem(t, a.put(at(actionsPath, act.ActionID), map[string]any{"name": "n", "hookName": "h"}), http.StatusNotFound)
	wantProblem(t, a.del(at(actionsPath, act.ActionID)), http.StatusNotFound)
	wantProblem(t, a.get(at(topicActionsPath, m.TopicActionID)), http.StatusNotFound)
	wantIDs(t, "mappings of the topic", idsOf[topicActionBody](a, topicActionsPath+"?topicId="+itoa(tp.TopicID)), []int64{keep.TopicActionID})
	wantIDs(t, "actions", idsOf[actionBody](a, actionsPath), []int64{second.ActionID, third.ActionID})
	// A mapping to the deleted action is refused.
	wantProblem(t, a.post(topicActionsPath, map[string]any{"topicID": tp.TopicID, "actionID": act.ActionID, "priority": 1}), http.StatusBadRequest, "actionID")
	for _, id := range []string{"abc", "0", "-2"} {
		wantProblem(t, a.get(actionsPath+"/"+id), http.StatusBadRequest, "id")
		wantProblem(t, a.put(actionsPath+"/"+id, map[string]any{"name": "n", "hookName": "h"}), http.StatusBadRequest, "id")
		wantProblem(t, a.del(actionsPath+"/"+id), http.StatusBadRequest, "id")
	}
}

func TestDocumentsCRUD(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	a := tn.on(t)
	sfx := randid.Hex(3)

	r := a.post(documentsPath, map[string]any{"title": " Returns policy " + sfx + " ", "content": "Line 1\nLine 2\n"})
	var doc documentBody
	wantOK(t, r, http.StatusCreated, &doc)
	wantLocation(t, r, documentsPath, doc.DocumentID)
	if doc.Title != "Returns policy "+sfx || doc.Content != "Line 1\nLine 2\n" || doc.IsHook || doc.HookName != "" || doc.ChannelID != nil || doc.CustomerID != tn.customerID {
		t.Fatalf("created %s", r.Body)
	}
	if got := getAs[documentBody](a, r.Header.Get("Location")); !jsonEqual(got, doc) {
		t.Fatalf("GET Location = %+v", got)
	}

	for _, tc := range []struct {
		name   string
		body   any
		fields []string
	}{
		{"empty object", `{}`, []string{"title"}},
		{"title of 301 characters", map[string]any{"title": strings.Repeat("t", 301)}, []string{"title"}},
		{"title with a newline", map[string]any{"title": "a\nb"}, []string{"title"}},
		{"content of 100001 characters", map[string]any{"title": "t", "content": strings.Repeat("c", 100_001)}, []string{"content"}},
		{"content with NUL", map[string]any{"title": "t", "content": "a\u0000b"}, []string{"content"}},
		{"hook without hookName", map[string]any{"title": "t", "isHook": true}, []string{"hookName"}},
		{"hookName of 201 characters", map[string]any{"title": "t", "hookName": strings.Repeat("h", 201)}, []string{"hookName"}},
		{"channelID 0", map[string]any{"title": "t", "channelID": 0}, []string{"channelID"}},
		{"isHook as a string", `{"title":"t","isHook":"yes"}`, []string{"isHook"}},
		{"content as a number", `{"title":"t","content":5}`, []string{"content"}},
		{"title and channel invalid", map[string]any{"title": "", "channelID": -1}, []string{"title", "channelID"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tn.on(t)
			wantProblem(t, a.post(documentsPath, tc.body), http.StatusBadRequest, tc.fields...)
			wantProblem(t, a.put(at(documentsPath, doc.DocumentID), tc.body), http.StatusBadRequest, tc.fields...)
		})
	}
	if got := getAs[documentBody](a, at(documentsPath, doc.DocumentID)); !jsonEqual(got, doc) {
		t.Fatalf("refused PUTs changed the document: %+v", got)
	}

	// The bounds: 300-character title, 100000 characters of content.
	big := a.post(documentsPath, map[string]any{"title": strings.Repeat("T", 300), "content": strings.Repeat("ü", 100_000)})
	var bigDoc documentBody
	wantOK(t, big, http.StatusCreated, &bigDoc)
	if len([]rune(bigDoc.Content)) != 100_000 {
		t.Fatalf("content of %d characters", len([]rune(bigDoc.Content)))
	}

	// PUT replaces every field.
	wantOK(t, a.put(at(documentsPath, doc.DocumentID), map[string]any{"title": "Returns " + sfx, "content": "new", "hookName": "Orders", "isHook": true, "channelID": 2}), http.StatusNoContent, nil)
	got := getAs[documentBody](a, at(documentsPath, doc.DocumentID))
	if got.Title != "Returns "+sfx || got.Content != "new" || !got.IsHook || got.HookName != "Orders" || got.ChannelID == nil || *got.ChannelID != 2 {
		t.Fatalf("after PUT %+v", got)
	}
	wantOK(t, a.put(at(documentsPath, doc.DocumentID), map[string]any{"title": "Returns " + sfx}), http.StatusNoContent, nil)
	r = a.get(at(documentsPath, doc.DocumentID))
	wantOK(t, r, http.StatusOK, &got)
	if got.Content != "" || got.IsHook || got.HookName != "" || got.ChannelID != nil || !strings.Contains(string(r.Body), `"channelID":null`) {
		t.Fatalf("a PUT without the optional fields keeps old values: %s", r.Body)
	}
	wantProblem(t, a.put(at(documentsPath, missingID), map[string]any{"title": "t"}), http.StatusNotFound)
	wantProblem(t, a.get(at(documentsPath, missingID)), http.StatusNotFound)

	third := a.createDocument("Third "+sfx, ptr[int64](5), "hook", true)
	checkPaging[documentBody](t, a, documentsPath, []int64{doc.DocumentID, bigDoc.DocumentID, third.DocumentID})

	// DELETE removes the document and its topic links.
	tp := a.createTopic("With document "+sfx, "")
	m := a.mapDocument(tp.TopicID, doc.DocumentID, 10)
	keep := a.mapDocument(tp.TopicID, third.DocumentID, 20)
	wantOK(t, a.del(at(documentsPath, doc.DocumentID)), http.StatusNoContent, nil)
	wantProblem(t, a.get(at(documentsPath, doc.DocumentID)), http.StatusNotFound)
	wantProblem(t, a.put(at(documentsPath, doc.DocumentID), map[string]any{"title": "t"}), http.StatusNotFound)
	wantProblem(t, a.del(at(documentsPath, doc.DocumentID)), http.StatusNotFound)
	wantProblem(t, a.get(at(topicDocumentsPath, m.TopicDocumentID)), http.StatusNotFound)
	wantIDs(t, "links of the topic", idsOf[topicDocumentBody](a, topicDocumentsPath+"?topicId="+itoa(tp.TopicID)), []int64{keep.TopicDocumentID})
	wantIDs(t, "documents", idsOf[documentBody](a, documentsPath), []int64{bigDoc.DocumentID, third.DocumentID})
	wantProblem(t, a.post(topicDocumentsPath, map[string]any{"topicID": tp.TopicID, "documentID": doc.DocumentID, "relevanceScore": 1}), http.StatusBadRequest, "documentID")
	for _, id := range []string{"abc", "0", "-2"} {
		wantProblem(t, a.get(documentsPath+"/"+id), http.StatusBadRequest, "id")
		wantProblem(t, a.put(documentsPath+"/"+id, map[string]any{"title": "t"}), http.StatusBadRequest, "id")
		wantProblem(t, a.del(documentsPath+"/"+id), http.StatusBadRequest, "id")
	}
}

// A second customer sees none of the first one's records: 404 on every
// id-taking route, 400 when linking to them, absent from every list and
// lookup. The first customer's records survive unchanged.
func TestTopicsCrossTenant(t *testing.T) {
	t.Parallel()
	ta, tb := newTenant(t), newTenant(t)
	a, b := ta.on(t), tb.on(t)
	sfx := randid.Hex(3)

	aTopic := a.createTopic("Owned "+sfx, "only for A")
	aAction := a.createAction("A action "+sfx, "hook", ptr[int64](3), true)
	aDoc := a.createDocument("A document "+sfx, ptr[int64](3), "hook", true)
	aTA := a.mapAction(aTopic.TopicID, aAction.ActionID, 1, true)
	aTD := a.mapDocument(aTopic.TopicID, aDoc.DocumentID, 50)
	aPM := a.mapPage(aTopic.TopicID, "https://shared-"+sfx+".example/", "prefix")

	// B's own records, for bodies that must be valid.
	bTopic := b.createTopic("Owned "+sfx, "same name, other customer") // names are unique per customer only
	bAction := b.createAction("B action "+sfx, "hook", ptr[int64](3), true)
	bDoc := b.createDocument("B document "+sfx, ptr[int64](3), "hook", true)
	bPM := b.mapPage(bTopic.TopicID, "https://shared-"+sfx+".example/b/", "prefix")
	bTA := b.mapAction(bTopic.TopicID, bAction.ActionID, 1, true)
	bTD := b.mapDocument(bTopic.TopicID, bDoc.DocumentID, 10)
	bAction2 := b.createAction("B action two "+sfx, "hook", ptr[int64](3), true)

	records := []struct {
		base string
		id   int64
		put  any
	}{
		{topicsPath, aTopic.TopicID, map[string]any{"name": "Stolen " + sfx}},
		{actionsPath, aAction.ActionID, map[string]any{"name": "Stolen", "hookName": "h"}},
		{documentsPath, aDoc.DocumentID, map[string]any{"title": "Stolen"}},
		{topicActionsPath, aTA.TopicActionID, map[string]any{"priority": 9}},
		{topicDocumentsPath, aTD.TopicDocumentID, map[string]any{"relevanceScore": 9}},
		{pageMappingsPath, aPM.PageTopicMappingID, map[string]any{"topicID": bTopic.TopicID, "urlPattern": "https://stolen.example/", "matchType": "exact"}},
	}
	for _, rec := range records {
		t.Run(rec.base, func(t *testing.T) {
			a, b := ta.on(t), tb.on(t)
			before := a.get(at(rec.base, rec.id))
			wantOK(t, before, http.StatusOK, nil)
			wantProblem(t, b.get(at(rec.base, rec.id)), http.StatusNotFound)
			wantProblem(t, b.put(at(rec.base, rec.id), rec.put), http.StatusNotFound)
			wantProblem(t, b.del(at(rec.base, rec.id)), http.StatusNotFound)
			after := a.get(at(rec.base, rec.id))
			wantOK(t, after, http.StatusOK, nil)
			if string(after.Body) != string(before.Body) {
				t.Fatalf("the owner's record changed: %s -> %s", before.Body, after.Body)
			}
		})
	}

	// B cannot link its records to A's: 400 naming the field.
	wantProblem(t, b.post(topicActionsPath, map[string]any{"topicID": aTopic.TopicID, "actionID": bAction.ActionID, "priority": 1}), http.StatusBadRequest, "topicID")
	wantProblem(t, b.post(topicActionsPath, map[string]any{"topicID": bTopic.TopicID, "actionID": aAction.ActionID, "priority": 1}), http.StatusBadRequest, "actionID")
	wantProblem(t, b.post(bulkPath, map[string]any{"items": []any{
		map[string]any{"topicID": bTopic.TopicID, "actionID": bAction2.ActionID, "priority": 1},
		map[string]any{"topicID": aTopic.TopicID, "actionID": aAction.ActionID, "priority": 1},
	}}), http.StatusBadRequest, "items[1].topicID", "items[1].actionID")
	wantProblem(t, b.post(topicDocumentsPath, map[string]any{"topicID": aTopic.TopicID, "documentID": bDoc.DocumentID, "relevanceScore": 1}), http.StatusBadRequest, "topicID")
	wantProblem(t, b.post(topicDocumentsPath, map[string]any{"topicID": bTopic.TopicID, "documentID": aDoc.DocumentID, "relevanceScore": 1}), http.StatusBadRequest, "documentID")
	wantProblem(t, b.post(pageMappingsPath, map[string]any{"topicID": aTopic.TopicID, "urlPattern": "https://b.example/", "matchType": "exact"}), http.StatusBadRequest, "topicID")
	wantProblem(t, b.put(at(pageMappingsPath, bPM.PageTopicMappingID), map[string]any{"topicID": aTopic.TopicID, "urlPattern": "https://b.example/", "matchType": "exact"}), http.StatusBadRequest, "topicID")
	if got := getAs[pageMappingBody](b, at(pageMappingsPath, bPM.PageTopicMappingID)); got != bPM {
		t.Fatalf("B's mapping changed: %+v", got)
	}

	// B's lists and lookups hold only B's records (nothing was created by the
	// refused requests, not even the valid bulk item).
	wantIDs(t, "B topics", idsOf[topicBody](b, topicsPath+"?pageSize=100"), []int64{bTopic.TopicID})
	wantIDs(t, "B topics by name", idsOf[topicBody](b, topicsPath+"?name="+url.QueryEscape("Owned "+sfx)), []int64{bTopic.TopicID})
	wantIDs(t, "B actions", idsOf[actionBody](b, actionsPath), []int64{bAction.ActionID, bAction2.ActionID})
	wantIDs(t, "B documents", idsOf[documentBody](b, documentsPath), []int64{bDoc.DocumentID})
	for _, q := range []string{"", "?hookName=hook", "?channelId=3", "?isActive=true"} {
		wantIDs(t, "B topic actions"+q, idsOf[topicActionBody](b, topicActionsPath+q), []int64{bTA.TopicActionID})
	}
	for _, q := range []string{"?topicId=" + itoa(aTopic.TopicID), "?actionId=" + itoa(aAction.ActionID)} {
		wantIDs(t, "B topic actions"+q, idsOf[topicActionBody](b, topicActionsPath+q), nil)
	}
	for _, q := range []string{"", "?isHook=true", "?channelId=3", "?hookName=HOOK"} {
		wantIDs(t, "B topic documents"+q, idsOf[topicDocumentBody](b, topicDocumentsPath+q), []int64{bTD.TopicDocumentID})
	}
	for _, q := range []string{"?topicId=" + itoa(aTopic.TopicID), "?documentId=" + itoa(aDoc.DocumentID)} {
		wantIDs(t, "B topic documents"+q, idsOf[topicDocumentBody](b, topicDocumentsPath+q), nil)
	}
	wantIDs(t, "B page mappings", idsOf[pageMappingBody](b, pageMappingsPath), []int64{bPM.PageTopicMappingID})
	wantIDs(t, "B page mappings of A's topic", idsOf[pageMappingBody](b, pageMappingsPath+"?topicId="+itoa(aTopic.TopicID)), nil)
	if _, ids := b.lookup("https://shared-" + sfx + ".example/a/page"); len(ids) != 0 {
		t.Fatalf("B's lookup found A's topics %v", ids)
	}
	if _, ids := b.lookup("https://shared-" + sfx + ".example/b/page"); !slices.Equal(ids, []int64{bTopic.TopicID}) {
		t.Fatalf("B's lookup: %v", ids)
	}
	// And A's are A's alone.
	if _, ids := a.lookup("https://shared-" + sfx + ".example/b/page"); !slices.Equal(ids, []int64{aTopic.TopicID}) {
		t.Fatalf("A's lookup: %v", ids)
	}
	wantIDs(t, "A topics", idsOf[topicBody](a, topicsPath), []int64{aTopic.TopicID})
	wantIDs(t, "A topic actions", idsOf[topicActionBody](a, topicActionsPath), []int64{aTA.TopicActionID})
	wantIDs(t, "A topic documents", idsOf[topicDocumentBody](a, topicDocumentsPath), []int64{aTD.TopicDocumentID})
	wantIDs(t, "A page mappings", idsOf[pageMappingBody](a, pageMappingsPath), []int64{aPM.PageTopicMappingID})
}

// Deleting a topic: it answers 404, its action, document and page mappings
// are neither listed nor readable nor writable, the lookup falls back to
// other topics, no new mapping may point at it, topic.deleted is published,
// and its name is free again.
func TestTopicDeletion(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	a := tn.on(t)
	sfx := randid.Hex(3)
	doomed := a.createTopic("Doomed "+sfx, "soon gone")
	keep := a.createTopic("Kept "+sfx, "")
	act := a.createAction("Act "+sfx, "hook", nil, true)
	doc := a.createDocument("Doc "+sfx, nil, "", false)
	ta := a.mapAction(doomed.TopicID, act.ActionID, 1, true)
	kta := a.mapAction(keep.TopicID, act.ActionID, 1, true)
	td := a.mapDocument(doomed.TopicID, doc.DocumentID, 90)
	ktd := a.mapDocument(keep.TopicID, doc.DocumentID, 10)
	site := "https://doomed-" + sfx + ".example/"
	pm := a.mapPage(doomed.TopicID, site+"docs/", "prefix")
	pmExact := a.mapPage(doomed.TopicID, site+"docs/exact", "exact")
	kpm := a.mapPage(keep.TopicID, site, "prefix")
	if _, ids := a.lookup(site + "docs/exact"); !slices.Equal(ids, []int64{doomed.TopicID}) {
		t.Fatalf("lookup before the delete: %v", ids)
	}

	nc, err := nats.Connect(stk.NATSURL) // the harness user: topics may only publish its events
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	events := make(chan *nats.Msg, 64)
	sub, err := nc.ChanSubscribe(contracts.Names{Prefix: stk.NATSPrefix}.Subject(contracts.EventSubject(contracts.EventTopicDeleted)), events)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	wantOK(t, a.del(at(topicsPath, doomed.TopicID)), http.StatusNoContent, nil)

	wantProblem(t, a.get(at(topicsPath, doomed.TopicID)), http.StatusNotFound)
	wantProblem(t, a.put(at(topicsPath, doomed.TopicID), map[string]any{"name": "Revived " + sfx}), http.StatusNotFound)
	wantProblem(t, a.del(at(topicsPath, doomed.TopicID)), http.StatusNotFound)
	wantIDs(t, "topics", idsOf[topicBody](a, topicsPath), []int64{keep.TopicID})
	wantIDs(t, "topics named Doomed", idsOf[topicBody](a, topicsPath+"?name=doomed"), nil)

	// Its mappings: not readable, not writable, not listed under any filter.
	for _, p := range []struct {
		path string
		put  any
	}{
		{at(topicActionsPath, ta.TopicActionID), map[string]any{"priority": 3}},
		{at(topicDocumentsPath, td.TopicDocumentID), map[string]any{"relevanceScore": 3}},
		{at(pageMappingsPath, pm.PageTopicMappingID), map[string]any{"topicID": keep.TopicID, "urlPattern": site + "moved/", "matchType": "prefix"}},
		{at(pageMappingsPath, pmExact.PageTopicMappingID), map[string]any{"topicID": keep.TopicID, "urlPattern": site + "moved", "matchType": "exact"}},
	} {
		wantProblem(t, a.get(p.path), http.StatusNotFound)
		wantProblem(t, a.put(p.path, p.put), http.StatusNotFound)
		wantProblem(t, a.del(p.path), http.StatusNotFound)
	}
	for _, q := range []string{"", "?actionId=" + itoa(act.ActionID), "?hookName=hook", "?isActive=true"} {
		wantIDs(t, "topic actions"+q, idsOf[topicActionBody](a, topicActionsPath+q), []int64{kta.TopicActionID})
	}
	wantIDs(t, "topic actions of the deleted topic", idsOf[topicActionBody](a, topicActionsPath+"?topicId="+itoa(doomed.TopicID)), nil)
	for _, q := range []string{"", "?documentId=" + itoa(doc.DocumentID), "?isHook=false"} {
		wantIDs(t, "topic documents"+q, idsOf[topicDocumentBody](a, topicDocumentsPath+q), []int64{ktd.TopicDocumentID})
	}
	wantIDs(t, "topic documents of the deleted topic", idsOf[topicDocumentBody](a, topicDocumentsPath+"?topicId="+itoa(doomed.TopicID)), nil)
	wantIDs(t, "page mappings", idsOf[pageMappingBody](a, pageMappingsPath), []int64{kpm.PageTopicMappingID})
	wantIDs(t, "page mappings of the deleted topic", idsOf[pageMappingBody](a, pageMappingsPath+"?topicId="+itoa(doomed.TopicID)), nil)

	// The lookup no longer returns it: the longest live prefix wins instead.
	for _, u := range []string{site + "docs/exact", site + "docs/page", site} {
		if _, ids := a.lookup(u); !slices.Equal(ids, []int64{keep.TopicID}) {
			t.Fatalf("lookup %s after the delete: %v", u, ids)
		}
	}

	// The action and the document it was linked to are still there.
	wantOK(t, a.get(at(actionsPath, act.ActionID)), http.StatusOK, nil)
	wantOK(t, a.get(at(documentsPath, doc.DocumentID)), http.StatusOK, nil)

	// Nothing new may point at it.
	wantProblem(t, a.post(topicActionsPath, map[string]any{"topicID": doomed.TopicID, "actionID": act.ActionID, "priority": 2}), http.StatusBadRequest, "topicID")
	wantProblem(t, a.post(bulkPath, []any{map[string]any{"topicID": doomed.TopicID, "actionID": act.ActionID, "priority": 2}}), http.StatusBadRequest, "items[0].topicID")
	wantProblem(t, a.post(topicDocumentsPath, map[string]any{"topicID": doomed.TopicID, "documentID": doc.DocumentID, "relevanceScore": 2}), http.StatusBadRequest, "topicID")
	wantProblem(t, a.post(pageMappingsPath, map[string]any{"topicID": doomed.TopicID, "urlPattern": site + "new", "matchType": "exact"}), http.StatusBadRequest, "topicID")
	wantProblem(t, a.put(at(pageMappingsPath, kpm.PageTopicMappingID), map[string]any{"topicID": doomed.TopicID, "urlPattern": site, "matchType": "prefix"}), http.StatusBadRequest, "topicID")
	if got := getAs[pageMappingBody](a, at(pageMappingsPath, kpm.PageTopicMappingID)); got != kpm {
		t.Fatalf("refused PUT changed the mapping: %+v", got)
	}

	// The NATS lookups of other services no longer return it or its mappings.
	rpc := func(subject string, req, reply any) {
		t.Helper()
		body, _ := json.Marshal(req)
		msg, err := nc.Request(contracts.Names{Prefix: stk.NATSPrefix}.Subject(subject), body, 10*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", subject, err)
		}
		var env struct {
			Data  json.RawMessage `json:"data"`
			Error any             `json:"error"`
		}
		if err := json.Unmarshal(msg.Data, &env); err != nil || env.Error != nil {
			t.Fatalf("%s reply %s: %v", subject, msg.Data, err)
		}
		if err := json.Unmarshal(env.Data, reply); err != nil {
			t.Fatal(err)
		}
	}
	var names contracts.TopicNamesReply
	rpc(contracts.RPCTopicNames, contracts.TopicNamesRequest{CustomerID: tn.customerID, TopicIDs: []int64{doomed.TopicID, keep.TopicID}}, &names)
	if len(names.Names) != 1 || names.Names[keep.TopicID] != keep.Name {
		t.Fatalf("names after the delete: %+v", names.Names)
	}
	var acts contracts.TopicActionsReply
	rpc(contracts.RPCTopicActions, contracts.TopicActionsRequest{CustomerID: tn.customerID, TopicID: doomed.TopicID}, &acts)
	if len(acts.Actions) != 0 {
		t.Fatalf("actions of the deleted topic: %+v", acts.Actions)
	}
	rpc(contracts.RPCTopicActions, contracts.TopicActionsRequest{CustomerID: tn.customerID, TopicID: keep.TopicID}, &acts)
	if len(acts.Actions) != 1 || acts.Actions[0].TopicActionID != kta.TopicActionID {
		t.Fatalf("actions of the kept topic: %+v", acts.Actions)
	}
	var docs contracts.TopicDocumentsReply
	rpc(contracts.RPCTopicDocuments, contracts.TopicDocumentsRequest{CustomerID: tn.customerID, TopicIDs: []int64{doomed.TopicID, keep.TopicID}}, &docs)
	if len(docs.Documents) != 1 || docs.Documents[0].TopicID != keep.TopicID || docs.Documents[0].RelevanceScore != 10 {
		t.Fatalf("documents after the delete: %+v", docs.Documents)
	}
	var all contracts.TopicsAllReply
	rpc(contracts.RPCTopicsAll, contracts.TopicsAllRequest{CustomerID: tn.customerID}, &all)
	if len(all.Topics) != 1 || all.Topics[0].TopicID != keep.TopicID {
		t.Fatalf("all topics after the delete: %+v", all.Topics)
	}

	// topic.deleted was published for it.
	deadline := time.After(10 * time.Second)
	for found := false; !found; {
		select {
		case m := <-events:
			var ev contracts.Event[contracts.TopicChanged]
			if err := json.Unmarshal(m.Data, &ev); err != nil {
				t.Fatalf("event %s: %v", m.Data, err)
			}
			if ev.Data.TopicID == doomed.TopicID {
				if ev.Type != contracts.EventTopicDeleted || ev.CustomerID != tn.customerID || ev.Data.Name != doomed.Name {
					t.Fatalf("event %+v", ev)
				}
				found = true
			}
		case <-deadline:
			t.Fatal("no topic.deleted event for the topic")
		}
	}

	// The name is free again, for a new topic with a new id and no mappings.
	again := a.createTopic(strings.ToUpper(doomed.Name), "")
	if again.TopicID == doomed.TopicID {
		t.Fatal("the deleted topic's id was reused")
	}
	wantIDs(t, "mappings of the new topic", idsOf[topicActionBody](a, topicActionsPath+"?topicId="+itoa(again.TopicID)), nil)
	if _, ids := a.lookup(site + "docs/exact"); !slices.Equal(ids, []int64{keep.TopicID}) {
		t.Fatalf("lookup after reusing the name: %v", ids)
	}
	// The deleted topic's mapping does not block mapping the action anew.
	a.mapAction(again.TopicID, act.ActionID, 1, true)
}

// Paths are matched ignoring case, by the gateway and by the service.
func TestTopicsPathsAreCaseInsensitive(t *testing.T) {
	t.Parallel()
	a := newTenant(t).on(t)
	sfx := randid.Hex(3)

	var tp topicBody
	r := a.post("/API/TOPICS", map[string]any{"name": "Case " + sfx})
	wantOK(t, r, http.StatusCreated, &tp)
	wantLocation(t, r, topicsPath, tp.TopicID) // the canonical spelling
	for _, p := range []string{"/api/topics/", "/API/TOPICS/", "/Api/ToPiCs/"} {
		if got := getAs[topicBody](a, p+itoa(tp.TopicID)); got != tp {
			t.Fatalf("GET %s: %+v", p, got)
		}
	}
	wantOK(t, a.put("/api/TOPICS/"+itoa(tp.TopicID), map[string]any{"name": "Case " + sfx, "description": "odd"}), http.StatusNoContent, nil)
	wantIDs(t, "odd-cased list", idsOf[topicBody](a, "/api/topics?NAME=case"), []int64{tp.TopicID})

	var act actionBody
	r = a.post("/api/ACTIONS", map[string]any{"name": "Act " + sfx, "hookName": "h"})
	wantOK(t, r, http.StatusCreated, &act)
	wantLocation(t, r, actionsPath, act.ActionID)
	act2 := getAs[actionBody](a, "/API/actions/"+itoa(act.ActionID))
	if act2.ActionID != act.ActionID {
		t.Fatalf("GET action: %+v", act2)
	}
	second := a.createAction("Act two "+sfx, "h", nil, true)
	var doc documentBody
	r = a.post("/api/documents", map[string]any{"title": "Doc " + sfx})
	wantOK(t, r, http.StatusCreated, &doc)
	wantLocation(t, r, documentsPath, doc.DocumentID)

	var ta topicActionBody
	r = a.post("/api/topicactions", map[string]any{"topicID": tp.TopicID, "actionID": act.ActionID, "priority": 3})
	wantOK(t, r, http.StatusCreated, &ta)
	wantLocation(t, r, topicActionsPath, ta.TopicActionID)
	var bulk bulkBody
	wantOK(t, a.post("/api/topicActions/BULK", []any{map[string]any{"topicID": tp.TopicID, "actionID": second.ActionID, "priority": 4}}), http.StatusCreated, &bulk)
	wantIDs(t, "odd-cased topic actions", idsOf[topicActionBody](a, "/API/TOPICACTIONS?TOPICID="+itoa(tp.TopicID)), []int64{ta.TopicActionID, bulk.Items[0].TopicActionID})
	wantOK(t, a.put("/api/TopicACTIONS/"+itoa(ta.TopicActionID), map[string]any{"priority": 9}), http.StatusNoContent, nil)

	var td topicDocumentBody
	r = a.post("/API/TopicDocuments", map[string]any{"topicID": tp.TopicID, "documentID": doc.DocumentID, "relevanceScore": 5})
	wantOK(t, r, http.StatusCreated, &td)
	wantLocation(t, r, topicDocumentsPath, td.TopicDocumentID)
	if got := getAs[topicDocumentBody](a, "/api/topicdocuments/"+itoa(td.TopicDocumentID)); got != td {
		t.Fatalf("GET topic document: %+v", got)
	}

	var pm pageMappingBody
	r = a.post("/api/PAGETOPICMAPPINGS", map[string]any{"topicID": tp.TopicID, "urlPattern": "https://case-" + sfx + ".example/", "matchType": "prefix"})
	wantOK(t, r, http.StatusCreated, &pm)
	wantLocation(t, r, pageMappingsPath, pm.PageTopicMappingID)
	var lk lookupBody
	wantOK(t, a.get("/api/pagetopicmappings/LOOKUP?Url="+url.QueryEscape("https://case-"+sfx+".example/x")), http.StatusOK, &lk)
	if len(lk.Topics) != 1 || lk.Topics[0].TopicID != tp.TopicID {
		t.Fatalf("odd-cased lookup: %+v", lk)
	}

	for _, d := range []struct{ odd, canonical string }{
		{"/API/PAGETOPICMAPPINGS/" + itoa(pm.PageTopicMappingID), at(pageMappingsPath, pm.PageTopicMappingID)},
		{"/api/TOPICDOCUMENTS/" + itoa(td.TopicDocumentID), at(topicDocumentsPath, td.TopicDocumentID)},
		{"/api/topicactions/" + itoa(ta.TopicActionID), at(topicActionsPath, ta.TopicActionID)},
		{"/Api/Documents/" + itoa(doc.DocumentID), at(documentsPath, doc.DocumentID)},
		{"/API/ACTIONS/" + itoa(act.ActionID), at(actionsPath, act.ActionID)},
		{"/api/tOpIcS/" + itoa(tp.TopicID), at(topicsPath, tp.TopicID)},
	} {
		wantOK(t, a.del(d.odd), http.StatusNoContent, nil)
		wantProblem(t, a.get(d.canonical), http.StatusNotFound)
	}
}

// Malformed JSON, wrong types and wrong content types on every route with a
// body are 4xx problems, never 5xx, and change nothing.
func TestTopicsMalformedBodies(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	a := tn.on(t)
	sfx := randid.Hex(3)
	tp := a.createTopic("Malformed "+sfx, "")
	act := a.createAction("Malformed "+sfx, "h", nil, true)
	doc := a.createDocument("Malformed "+sfx, nil, "", false)
	ta := a.mapAction(tp.TopicID, act.ActionID, 1, true)
	td := a.mapDocument(tp.TopicID, doc.DocumentID, 1)
	pm := a.mapPage(tp.TopicID, "https://malformed-"+sfx+".example/", "exact")

	routes := []struct {
		method, path string
		wrongType    string // a body with one field of the wrong type
		field        string // how errors names that field
	}{
		{"POST", topicsPath, `{"name":5}`, "name"},
		{"PUT", at(topicsPath, tp.TopicID), `{"name":"x","description":["a"]}`, "description"},
		{"POST", topicActionsPath, `{"topicID":"1","actionID":1,"priority":1}`, "topicID"},
		{"POST", bulkPath, `[{"topicID":1,"actionID":true,"priority":1}]`, "items[0].actionID"},
		{"PUT", at(topicActionsPath, ta.TopicActionID), `{"priority":"high"}`, "priority"},
		{"POST", topicDocumentsPath, `{"topicID":1,"documentID":1,"relevanceScore":"high"}`, "relevanceScore"},
		{"PUT", at(topicDocumentsPath, td.TopicDocumentID), `{"relevanceScore":true}`, "relevanceScore"},
		{"POST", pageMappingsPath, `{"topicID":1,"urlPattern":5,"matchType":"exact"}`, "urlPattern"},
		{"PUT", at(pageMappingsPath, pm.PageTopicMappingID), `{"topicID":1,"urlPattern":"https://x.example/","matchType":1}`, "matchType"},
		{"POST", actionsPath, `{"name":"x","hookName":"h","isActive":"no"}`, "isActive"},
		{"PUT", at(actionsPath, act.ActionID), `{"name":"x","hookName":"h","channelID":"4"}`, "channelID"},
		{"POST", documentsPath, `{"title":"x","isHook":"yes"}`, "isHook"},
		{"PUT", at(documentsPath, doc.DocumentID), `{"title":"x","content":5}`, "content"},
	}
	bodies := []struct {
		name, contentType, body string
		status                  int
	}{
		{"truncated JSON", "application/json", `{"name":`, 400},
		{"not JSON", "application/json", `name=x&priority=1`, 400},
		{"two JSON values", "application/json", `{} {}`, 400},
		{"empty body", "application/json", ``, 400},
		{"JSON string", "application/json", `"text"`, 400},
		{"JSON number", "application/json", `42`, 400},
		{"JSON null", "application/json", `null`, 400},
		{"empty array", "application/json", `[]`, 400},
		{"text/plain", "text/plain", `{"name":"x"}`, 415},
		{"form encoded", "application/x-www-form-urlencoded", `name=x`, 415},
		{"XML", "application/xml", `<name>x</name>`, 415},
		{"no content type", "", `{"name":"x"}`, 415},
		{"broken content type", "application/json; charset", `{"name":"x"}`, 415},
		{"too large", "application/json", `{"name":"` + strings.Repeat("x", 2<<20) + `"}`, 413},
	}
	for _, rt := range routes {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			a := tn.on(t)
			wantClientError(t, a.raw(rt.method, rt.path, "application/json", rt.wrongType), http.StatusBadRequest, rt.field)
			for _, b := range bodies {
				r := a.raw(rt.method, rt.path, b.contentType, b.body)
				if r.Status >= 500 || r.Status != b.status {
					t.Fatalf("%s: status %d, want %d: %s", b.name, r.Status, b.status, e2ekit.Truncate(r.Body))
				}
				wantClientError(t, r, b.status)
			}
		})
	}

	// Nothing was created or changed.
	if got := getAs[topicBody](a, at(topicsPath, tp.TopicID)); got != tp {
		t.Fatalf("topic %+v", got)
	}
	if got := getAs[actionBody](a, at(actionsPath, act.ActionID)); !jsonEqual(got, act) {
		t.Fatalf("action %+v", got)
	}
	if got := getAs[documentBody](a, at(documentsPath, doc.DocumentID)); !jsonEqual(got, doc) {
		t.Fatalf("document %+v", got)
	}
	if got := getAs[topicActionBody](a, at(topicActionsPath, ta.TopicActionID)); got != ta {
		t.Fatalf("topic action %+v", got)
	}
	if got := getAs[topicDocumentBody](a, at(topicDocumentsPath, td.TopicDocumentID)); got != td {
		t.Fatalf("topic document %+v", got)
	}
	if got := getAs[pageMappingBody](a, at(pageMappingsPath, pm.PageTopicMappingID)); got != pm {
		t.Fatalf("page mapping %+v", got)
	}
	wantIDs(t, "topics", idsOf[topicBody](a, topicsPath), []int64{tp.TopicID})
	wantIDs(t, "actions", idsOf[actionBody](a, actionsPath), []int64{act.ActionID})
	wantIDs(t, "documents", idsOf[documentBody](a, documentsPath), []int64{doc.DocumentID})
	wantIDs(t, "topic actions", idsOf[topicActionBody](a, topicActionsPath), []int64{ta.TopicActionID})
	wantIDs(t, "topic documents", idsOf[topicDocumentBody](a, topicDocumentsPath), []int64{td.TopicDocumentID})
	wantIDs(t, "page mappings", idsOf[pageMappingBody](a, pageMappingsPath), []int64{pm.PageTopicMappingID})
}

// Concurrent creates of the same topic name or the same pair end with one
// record and 409s, never a 5xx.
func TestTopicsConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	a := tn.on(t)
	sfx := randid.Hex(3)
	act := a.createAction("Race "+sfx, "h", nil, true)
	doc := a.createDocument("Race "+sfx, nil, "", false)
	base := a.createTopic("Race base "+sfx, "")

	race := func(t *testing.T, path string, body func(i int) any) {
		t.Helper()
		const n = 8
		statuses := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = client(t).Do(http.MethodPost, path, tn.token, body(i)).Status
			}()
		}
		wg.Wait()
		created := 0
		for _, s := range statuses {
			switch s {
			case http.StatusCreated:
				created++
			case http.StatusConflict:
			default:
				t.Fatalf("statuses %v: want one 201 and 409s", statuses)
			}
		}
		if created != 1 {
			t.Fatalf("statuses %v: want exactly one 201", statuses)
		}
	}
	name := "Race topic " + sfx
	race(t, topicsPath, func(i int) any {
		if i%2 == 1 {
			return map[string]any{"name": strings.ToUpper(name)}
		}
		return map[string]any{"name": " " + name}
	})
	if l := listOf[topicBody](a, topicsPath+"?name="+url.QueryEscape(name)); l.TotalCount != 1 || !strings.EqualFold(l.Items[0].Name, name) {
		t.Fatalf("topics named alike: %+v", l)
	}
	race(t, topicActionsPath, func(i int) any {
		return map[string]any{"topicID": base.TopicID, "actionID": act.ActionID, "priority": i}
	})
	if l := listOf[topicActionBody](a, topicActionsPath); l.TotalCount != 1 {
		t.Fatalf("%d topic actions", l.TotalCount)
	}
	race(t, topicDocumentsPath, func(i int) any {
		return map[string]any{"topicID": base.TopicID, "documentID": doc.DocumentID, "relevanceScore": i}
	})
	if l := listOf[topicDocumentBody](a, topicDocumentsPath); l.TotalCount != 1 {
		t.Fatalf("%d topic documents", l.TotalCount)
	}
	race(t, pageMappingsPath, func(i int) any {
		return map[string]any{"topicID": base.TopicID, "urlPattern": fmt.Sprintf("HTTPS://race-%s.example:443/#%d", sfx, i), "matchType": "exact"}
	})
	if l := listOf[pageMappingBody](a, pageMappingsPath); l.TotalCount != 1 {
		t.Fatalf("%d page mappings", l.TotalCount)
	}
}

// Two bulk requests that map overlapping pairs in different orders must not
// deadlock into a 500: the store orders its inserts, and a lost race is a 409.
func TestTopicActionsBulkConcurrentOverlap(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	a := tn.on(t)
	sfx := randid.Hex(3)
	tp := a.createTopic("Deadlock "+sfx, "")
	for round := range 3 {
		var forward, backward []any
		for i := range 20 {
			act := a.createAction(fmt.Sprintf("Deadlock %d %d %s", round, i, sfx), "h", nil, true)
			forward = append(forward, map[string]any{"topicID": tp.TopicID, "actionID": act.ActionID, "priority": i})
		}
		backward = slices.Clone(forward)
		slices.Reverse(backward)
		statuses := make([]int, 2)
		var wg sync.WaitGroup
		for i, body := range [][]any{forward, backward} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = client(t).Do(http.MethodPost, bulkPath, tn.token, body).Status
			}()
		}
		wg.Wait()
		slices.Sort(statuses)
		if !slices.Equal(statuses, []int{http.StatusCreated, http.StatusConflict}) {
			t.Fatalf("round %d: statuses %v, want one 201 and one 409", round, statuses)
		}
	}
}

// Invalid UTF-8 is refused, not stored as U+FFFD; so is a query string that
// does not decode (Go would silently drop the pair).
func TestTopicsInvalidUTF8AndMalformedQuery(t *testing.T) {
	t.Parallel()
	a := newTenant(t).on(t)
	name := "Caf\xe9 " + randid.Hex(3)
	r := a.raw(http.MethodPost, topicsPath, "application/json", "{\"name\":\""+name+"\"}")
	if p := wantProblem(t, r, http.StatusBadRequest); !strings.Contains(p.Detail, "UTF-8") {
		t.Fatalf("detail %q", p.Detail)
	}
	wantProblem(t, a.raw(http.MethodGet, topicsPath+"?pageSize=%zz", "", ""), http.StatusBadRequest)
	for _, q := range []string{"?name=%ff", "?name=a%00b"} {
		wantProblem(t, a.raw(http.MethodGet, topicsPath+q, "", ""), http.StatusBadRequest, "name")
	}
}

// The topics service refuses a token that the auth service's key signed but
// that differs from a real one in one property, and one signed by another
// key: 401 with a challenge, on reads, writes and lookups alike.
func TestTopicsRejectBadTokens(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	hdr, claims := tokenParts(t, tn.token)
	kid := hdr["kid"].(string)
	key := signingKey(t)
	_, otherKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	with := func(f func(*authn.Claims)) string {
		c := claims
		f(&c)
		return mint(t, kid, c, key)
	}
	// Sanity: re-minted unchanged, the token works, so each refusal below
	// is due to its one difference.
	wantOK(t, as{t: t, c: client(t), token: mint(t, kid, claims, key)}.get(topicsPath), http.StatusOK, nil)

	bad := map[string]string{
		"expired": with(func(c *authn.Claims) {
			c.IssuedAt = jwt.NewNumericDate(time.Now().Add(-2 * time.Hour))
			c.IssuedAtMs = c.IssuedAt.UnixMilli()
			c.NotBefore = c.IssuedAt
			c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-time.Hour))
		}),
		"not yet valid":  with(func(c *authn.Claims) { c.NotBefore = jwt.NewNumericDate(time.Now().Add(time.Hour)) }),
		"wrong issuer":   with(func(c *authn.Claims) { c.Issuer = "https://evil.example" }),
		"wrong audience": with(func(c *authn.Claims) { c.Audience = jwt.ClaimStrings{"other-api"} }),
		"another key":    mint(t, kid, claims, otherKey),
		"unknown kid":    mint(t, "not-a-kid", claims, otherKey),
	}
	for name, token := range bad {
		t.Run(name, func(t *testing.T) {
			a := as{t: t, c: client(t), token: token}
			for _, r := range []*e2ekit.Response{
				a.get(topicsPath),
				a.post(topicsPath, map[string]any{"name": "Forged " + randid.Hex(3)}),
				a.get(lookupPath + "?url=" + url.QueryEscape("https://shop.example/")),
				a.del(at(topicActionsPath, 1)),
			} {
				wantProblem(t, r, http.StatusUnauthorized)
				if r.Header.Get("WWW-Authenticate") == "" {
					t.Fatalf("no WWW-Authenticate challenge: %s", r.Body)
				}
			}
		})
	}
	wantIDs(t, "topics after forged requests", idsOf[topicBody](tn.on(t), topicsPath), nil)
}

// Paths under the topics prefixes that the service does not serve, and
// methods it does not allow, are problems from the service (the gateway
// routes the whole prefix to it); every problem names its path and request.
func TestTopicsUnknownRoutesAndMethods(t *testing.T) {
	t.Parallel()
	tn := newTenant(t)
	tp := tn.on(t).createTopic("Routes "+randid.Hex(3), "")
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, at(topicsPath, tp.TopicID) + "/extra", http.StatusNotFound},
		{http.MethodGet, "/api/TopicActions/bulk/1", http.StatusNotFound},
		{http.MethodPatch, at(topicsPath, tp.TopicID), http.StatusMethodNotAllowed},
		{http.MethodDelete, topicsPath, http.StatusMethodNotAllowed},
		{http.MethodPut, pageMappingsPath, http.StatusMethodNotAllowed},
	} {
		req, err := http.NewRequestWithContext(t.Context(), tc.method, stk.HTTPSURL+tc.path, strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tn.token)
		resp, err := stk.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Fatalf("%s %s: %d, want %d: %s", tc.method, tc.path, resp.StatusCode, tc.status, body)
		}
		if err := api.ValidateProblem(resp.StatusCode, resp.Header, body); err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
	}
	if got := getAs[topicBody](tn.on(t), at(topicsPath, tp.TopicID)); got != tp {
		t.Fatalf("the topic changed: %+v", got)
	}

	// A problem carries the request's path as its instance and the request id
	// of the X-Request-Id header.
	r := tn.on(t).get(topicsPath + "/0?pageSize=1")
	p := wantProblem(t, r, http.StatusBadRequest, "id")
	if p.Instance != topicsPath+"/0" {
		t.Fatalf("instance %q, want %q", p.Instance, topicsPath+"/0")
	}
}

func jsonEqual(x, y any) bool {
	bx, err1 := json.Marshal(x)
	by, err2 := json.Marshal(y)
	return err1 == nil && err2 == nil && string(bx) == string(by)
}
