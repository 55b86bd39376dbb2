package e2e

import (
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/randid"
)

// Helpers of the topics end-to-end tests (topics_test.go). Every request
// goes through the gateway over HTTPS with the contract-checking Client;
// every test works in tenants of its own, so lists hold only what the test
// created and the tests may run in any order, in parallel.

// Bodies of the topics service, with the JSON names of the contract.
type (
	topicBody struct {
		TopicID     int64  `json:"topicID"`
		CustomerID  int64  `json:"customerID"`
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	actionBody struct {
		ActionID   int64  `json:"actionID"`
		CustomerID int64  `json:"customerID"`
		Name       string `json:"name"`
		HookName   string `json:"hookName"`
		ChannelID  *int64 `json:"channelID"`
		IsActive   bool   `json:"isActive"`
	}
	documentBody struct {
		DocumentID int64  `json:"documentID"`
		CustomerID int64  `json:"customerID"`
		Title      string `json:"title"`
		Content    string `json:"content"`
		ChannelID  *int64 `json:"channelID"`
		HookName   string `json:"hookName"`
		IsHook     bool   `json:"isHook"`
	}
	topicActionBody struct {
		TopicActionID int64 `json:"topicActionID"`
		TopicID       int64 `json:"topicID"`
		ActionID      int64 `json:"actionID"`
		Priority      int   `json:"priority"`
		IsActive      bool  `json:"isActive"`
	}
	topicDocumentBody struct {
		TopicDocumentID int64 `json:"topicDocumentID"`
		TopicID         int64 `json:"topicID"`
		DocumentID      int64 `json:"documentID"`
		RelevanceScore  int   `json:"relevanceScore"`
	}
	pageMappingBody struct {
		PageTopicMappingID int64  `json:"pageTopicMappingID"`
		TopicID            int64  `json:"topicID"`
		URLPattern         string `json:"urlPattern"`
		MatchType          string `json:"matchType"`
	}
	lookupBody struct {
		URL    string      `json:"url"`
		Topics []topicBody `json:"topics"`
	}
	bulkBody struct {
		Items []topicActionBody `json:"items"`
	}
)

// listBody is the envelope of every list.
type listBody[T any] struct {
	Items      []T `json:"items"`
	TotalCount int `json:"totalCount"`
	TotalPages int `json:"totalPages"`
}

// keyed is what every record body has: its id.
type keyed interface{ key() int64 }

func (b topicBody) key() int64         { return b.TopicID }
func (b actionBody) key() int64        { return b.ActionID }
func (b documentBody) key() int64      { return b.DocumentID }
func (b topicActionBody) key() int64   { return b.TopicActionID }
func (b topicDocumentBody) key() int64 { return b.TopicDocumentID }
func (b pageMappingBody) key() int64   { return b.PageTopicMappingID }

func keysOf[T keyed](items []T) []int64 {
	out := []int64{}
	for _, it := range items {
		out = append(out, it.key())
	}
	return out
}

// Base paths of the topics service.
const (
	topicsPath         = "/api/Topics"
	topicActionsPath   = "/api/TopicActions"
	bulkPath           = "/api/TopicActions/bulk"
	topicDocumentsPath = "/api/TopicDocuments"
	pageMappingsPath   = "/api/PageTopicMappings"
	lookupPath         = "/api/PageTopicMappings/lookup"
	actionsPath        = "/api/Actions"
	documentsPath      = "/api/Documents"
)

// at is the path of one record.
func at(base string, id int64) string { return base + "/" + strconv.FormatInt(id, 10) }

func itoa(id int64) string { return strconv.FormatInt(id, 10) }

func ptr[T any](v T) *T { return &v }

// An id that no customer has.
const missingID = int64(1) << 60

// tenant is a customer of its own, created for one test.
type tenant struct {
	token      string
	customerID int64
}

// newTenant bootstraps a customer with a unique name, logs its admin in and
// reads its customer id from /api/Customers/me.
func newTenant(t *testing.T) tenant {
	t.Helper()
	_, _, token := newCustomer(t, "Topics "+randid.Hex(4))
	r := client(t).Do(http.MethodGet, "/api/Customers/me", token, nil)
	var m me
	wantOK(t, r, http.StatusOK, &m)
	if m.Customer.CustomerID <= 0 {
		t.Fatalf("me: %s", r.Body)
	}
	return tenant{token: token, customerID: m.Customer.CustomerID}
}

// as is a tenant's view of the API for test t (the Client fails t, so each
// subtest takes its own).
type as struct {
	t     *testing.T
	c     *e2ekit.Client
	token string
}

func (tn tenant) on(t *testing.T) as { return as{t: t, c: client(t), token: tn.token} }

func (a as) do(method, path string, body any) *e2ekit.Response {
	a.t.Helper()
	return a.c.Do(method, path, a.token, body)
}

func (a as) get(path string) *e2ekit.Response { a.t.Helper(); return a.do(http.MethodGet, path, nil) }
func (a as) post(path string, body any) *e2ekit.Response {
	a.t.Helper()
	return a.do(http.MethodPost, path, body)
}
func (a as) put(path string, body any) *e2ekit.Response {
	a.t.Helper()
	return a.do(http.MethodPut, path, body)
}
func (a as) del(path string) *e2ekit.Response {
	a.t.Helper()
	return a.do(http.MethodDelete, path, nil)
}

// raw sends body with the given Content-Type ("" sends none).
func (a as) raw(method, path, contentType, body string) *e2ekit.Response {
	a.t.Helper()
	req, err := http.NewRequestWithContext(a.t.Context(), method, stk.HTTPSURL+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	return a.c.DoRequest(req)
}

// wantOK checks a successful answer and decodes its body into v (unless nil).
// A 204 must come without a body.
func wantOK(t testing.TB, r *e2ekit.Response, status int, v any) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, e2ekit.Truncate(r.Body))
	}
	if status == http.StatusNoContent && len(r.Body) != 0 {
		t.Fatalf("204 with a body: %q", e2ekit.Truncate(r.Body))
	}
	if v != nil {
		r.JSON(t, v)
	}
}

// wantProblem checks an error answer: the status, an application/problem+json
// body with the same status, a title, a type and the request id of the
// X-Request-ID header. With fields, `errors` must name exactly those fields.
func wantProblem(t testing.TB, r *e2ekit.Response, status int, fields ...string) e2ekit.Problem {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, e2ekit.Truncate(r.Body))
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json: %s", ct, e2ekit.Truncate(r.Body))
	}
	p := r.Problem(t)
	if p.Status != status || p.Title == "" || p.Type == "" {
		t.Fatalf("problem %+v", p)
	}
	if p.RequestID == "" || p.RequestID != r.Header.Get("X-Request-Id") {
		t.Fatalf("problem requestId %q, X-Request-Id %q", p.RequestID, r.Header.Get("X-Request-Id"))
	}
	if fields != nil {
		got := make([]string, 0, len(p.Errors))
		for k, msg := range p.Errors {
			got = append(got, k)
			if msg == "" {
				t.Fatalf("errors[%s] has no message: %+v", k, p.Errors)
			}
		}
		want := slices.Clone(fields)
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Fatalf("errors name %v, want %v: %+v", got, want, p)
		}
	}
	return p
}

// wantClientError checks that the answer is a 4xx problem (never a 5xx) with
// status want.
func wantClientError(t testing.TB, r *e2ekit.Response, want int, fields ...string) e2ekit.Problem {
	t.Helper()
	if r.Status >= 500 {
		t.Fatalf("server error %d: %s", r.Status, e2ekit.Truncate(r.Body))
	}
	return wantProblem(t, r, want, fields...)
}

// listOf GETs a list and decodes it, checking the envelope's arithmetic.
func listOf[T any](a as, path string) listBody[T] {
	a.t.Helper()
	var l listBody[T]
	r := a.get(path)
	wantOK(a.t, r, http.StatusOK, &l)
	if l.Items == nil {
		a.t.Fatalf("%s: items is not an array: %s", path, r.Body)
	}
	return l
}

// idsOf GETs a list and returns its ids, checking that it is complete.
func idsOf[T keyed](a as, path string) []int64 {
	a.t.Helper()
	l := listOf[T](a, path)
	if l.TotalCount != len(l.Items) {
		a.t.Fatalf("%s: totalCount %d but %d items (the list must fit one page here)", path, l.TotalCount, len(l.Items))
	}
	return keysOf(l.Items)
}

func wantIDs(t testing.TB, what string, got, want []int64) {
	t.Helper()
	if want == nil {
		want = []int64{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: ids %v, want %v", what, got, want)
	}
}

// withQuery appends query to path with ? or &.
func withQuery(path, query string) string {
	if query == "" {
		return path
	}
	if strings.Contains(path, "?") {
		return path + "&" + query
	}
	return path + "?" + query
}

// checkPaging walks a list route (path may carry filters) whose full
// content, in order, is want: pages of 2 concatenate to it, the last page
// holds the rest, a page past the end is empty, pageSize=100 is accepted, and
// out-of-range or malformed paging parameters are a 400 naming them.
func checkPaging[T keyed](t *testing.T, a as, path string, want []int64) {
	t.Helper()
	total := len(want)
	if total < 3 || total > 100 {
		t.Fatalf("checkPaging needs 3 to 100 records, has %d", total)
	}

	full := listOf[T](a, withQuery(path, "pageSize=100"))
	if full.TotalCount != total || full.TotalPages != 1 || !slices.Equal(keysOf(full.Items), want) {
		t.Fatalf("%s pageSize=100: total %d pages %d ids %v, want %d, 1, %v", path, full.TotalCount, full.TotalPages, keysOf(full.Items), total, want)
	}
	def := listOf[T](a, path)
	if n := min(total, 20); len(def.Items) != n || def.TotalCount != total {
		t.Fatalf("%s default page: %d items of %d, want %d of %d", path, len(def.Items), def.TotalCount, n, total)
	}

	pages := (total + 1) / 2
	var walked []int64
	for n := 1; n <= pages; n++ {
		p := listOf[T](a, withQuery(path, "pageSize=2&pageNumber="+strconv.Itoa(n)))
		size := 2
		if n == pages && total%2 == 1 {
			size = 1 // the last page holds the rest
		}
		if len(p.Items) != size || p.TotalCount != total || p.TotalPages != pages {
			t.Fatalf("%s page %d of size 2: %d items, total %d, pages %d; want %d, %d, %d", path, n, len(p.Items), p.TotalCount, p.TotalPages, size, total, pages)
		}
		walked = append(walked, keysOf(p.Items)...)
	}
	if !slices.Equal(walked, want) {
		t.Fatalf("%s: pages of 2 give %v, want %v", path, walked, want)
	}
	past := a.get(withQuery(path, "pageSize=2&pageNumber="+strconv.Itoa(pages+1)))
	var pl listBody[T]
	wantOK(t, past, http.StatusOK, &pl)
	if len(pl.Items) != 0 || pl.TotalCount != total || !strings.Contains(string(past.Body), `"items":[]`) {
		t.Fatalf("%s past the last page: %s", path, past.Body)
	}
	last := listOf[T](a, withQuery(path, "pageSize=1&pageNumber="+strconv.Itoa(total)))
	if len(last.Items) != 1 || last.TotalPages != total || last.Items[0].key() != want[total-1] {
		t.Fatalf("%s pageSize=1 last page: %+v", path, last)
	}

	for _, q := range []struct{ query, field string }{
		{"pageSize=0", "pageSize"},
		{"pageSize=101", "pageSize"},
		{"pageSize=-1", "pageSize"},
		{"pageSize=ten", "pageSize"},
		{"pageSize=2.5", "pageSize"},
		{"pageNumber=0", "pageNumber"},
		{"pageNumber=-3", "pageNumber"},
		{"pageNumber=first", "pageNumber"},
		{"PAGESIZE=0", "pageSize"}, // parameter names are matched ignoring case
	} {
		wantProblem(t, a.get(withQuery(path, q.query)), http.StatusBadRequest, q.field)
	}
	wantProblem(t, a.get(withQuery(path, "pageSize=0&pageNumber=0")), http.StatusBadRequest, "pageSize", "pageNumber")
}

// ---- record creation through the API ----

func (a as) createTopic(name, description string) topicBody {
	a.t.Helper()
	var b topicBody
	r := a.post(topicsPath, map[string]any{"name": name, "description": description})
	wantOK(a.t, r, http.StatusCreated, &b)
	wantLocation(a.t, r, topicsPath, b.TopicID)
	return b
}

func (a as) createAction(name, hook string, channel *int64, active bool) actionBody {
	a.t.Helper()
	var b actionBody
	r := a.post(actionsPath, map[string]any{"name": name, "hookName": hook, "channelID": channel, "isActive": active})
	wantOK(a.t, r, http.StatusCreated, &b)
	wantLocation(a.t, r, actionsPath, b.ActionID)
	return b
}

func (a as) createDocument(title string, channel *int64, hook string, isHook bool) documentBody {
	a.t.Helper()
	var b documentBody
	r := a.post(documentsPath, map[string]any{"title": title, "content": "About " + title, "channelID": channel, "hookName": hook, "isHook": isHook})
	wantOK(a.t, r, http.StatusCreated, &b)
	wantLocation(a.t, r, documentsPath, b.DocumentID)
	return b
}

func (a as) mapAction(topicID, actionID int64, priority int, active bool) topicActionBody {
	a.t.Helper()
	var b topicActionBody
	r := a.post(topicActionsPath, map[string]any{"topicID": topicID, "actionID": actionID, "priority": priority, "isActive": active})
	wantOK(a.t, r, http.StatusCreated, &b)
	wantLocation(a.t, r, topicActionsPath, b.TopicActionID)
	if b.TopicID != topicID || b.ActionID != actionID || b.Priority != priority || b.IsActive != active {
		a.t.Fatalf("created %+v", b)
	}
	return b
}

func (a as) mapDocument(topicID, documentID int64, score int) topicDocumentBody {
	a.t.Helper()
	var b topicDocumentBody
	r := a.post(topicDocumentsPath, map[string]any{"topicID": topicID, "documentID": documentID, "relevanceScore": score})
	wantOK(a.t, r, http.StatusCreated, &b)
	wantLocation(a.t, r, topicDocumentsPath, b.TopicDocumentID)
	if b.TopicID != topicID || b.DocumentID != documentID || b.RelevanceScore != score {
		a.t.Fatalf("created %+v", b)
	}
	return b
}

func (a as) mapPage(topicID int64, pattern, matchType string) pageMappingBody {
	a.t.Helper()
	var b pageMappingBody
	r := a.post(pageMappingsPath, map[string]any{"topicID": topicID, "urlPattern": pattern, "matchType": matchType})
	wantOK(a.t, r, http.StatusCreated, &b)
	wantLocation(a.t, r, pageMappingsPath, b.PageTopicMappingID)
	if b.TopicID != topicID {
		a.t.Fatalf("created %+v", b)
	}
	return b
}

func wantLocation(t testing.TB, r *e2ekit.Response, base string, id int64) {
	t.Helper()
	if id <= 0 {
		t.Fatalf("created id %d: %s", id, r.Body)
	}
	if loc := r.Header.Get("Location"); loc != at(base, id) {
		t.Fatalf("Location %q, want %q", loc, at(base, id))
	}
}

// getAs GETs one record and decodes it.
func getAs[T any](a as, path string) T {
	a.t.Helper()
	var v T
	wantOK(a.t, a.get(path), http.StatusOK, &v)
	return v
}

// lookup asks which topics a page URL has and returns the normalised URL and
// the topic ids.
func (a as) lookup(pageURL string) (string, []int64) {
	a.t.Helper()
	var l lookupBody
	r := a.get(lookupPath + "?url=" + url.QueryEscape(pageURL))
	wantOK(a.t, r, http.StatusOK, &l)
	if l.Topics == nil {
		a.t.Fatalf("lookup %s: topics is not an array: %s", pageURL, r.Body)
	}
	return l.URL, keysOf(l.Topics)
}
