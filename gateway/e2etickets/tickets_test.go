package e2etickets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
)

// The Tickets API through the gateway. Messages are written straight into
// the database by tkAddMessage until the TicketMessages API exists.

type tkFeedback struct {
	MessageID   int64  `json:"messageID"`
	Comment     string `json:"comment"`
	Email       string `json:"email"`
	DateCreated string `json:"dateCreated"`
}

type tkTicketBody struct {
	TicketID           int64           `json:"ticketID"`
	DateCreated        string          `json:"dateCreated"`
	DateUpdated        string          `json:"dateUpdated"`
	Status             string          `json:"status"`
	Subject            string          `json:"subject"`
	ChannelID          int64           `json:"channelID"`
	EndUserID          int64           `json:"endUserID"`
	CustomerRepID      *int64          `json:"customerRepID"`
	IsClosed           bool            `json:"isClosed"`
	Topics             []string        `json:"topics"`
	AIFeedbackComments []tkFeedback    `json:"aiFeedbackComments"`
	CustomFieldsData   json.RawMessage `json:"customFieldsData"`
	TicketToken        string          `json:"ticketToken"`
}

// tkEnv is a tenant with a live channel and an end user.
type tkEnv struct {
	tn        tenant
	channelID int64
	endUserID int64
}

func tkNewEnv(t *testing.T) tkEnv {
	t.Helper()
	tn := newTenant(t)
	return tkEnv{tn: tn, channelID: createChannel(t, tn),
		endUserID: createEndUser(t, tn.AgentToken, map[string]any{"name": "Ada " + randid.Hex(3)}).EndUserID}
}

// tkCreate makes a ticket and checks its Location.
func tkCreate(t *testing.T, token string, body map[string]any) tkTicketBody {
	t.Helper()
	r := client(t).Do(http.MethodPost, "/api/Tickets", token, body)
	var tk tkTicketBody
	wantStatus(t, r, http.StatusCreated, &tk)
	if r.Header.Get("Location") != fmt.Sprintf("/api/Tickets/%d", tk.TicketID) {
		t.Fatalf("Location %q for %d", r.Header.Get("Location"), tk.TicketID)
	}
	return tk
}

// tkOpen makes an Open ticket of the env's end user.
func (e tkEnv) tkOpen(t *testing.T, subject string) tkTicketBody {
	t.Helper()
	return tkCreate(t, e.tn.AgentToken, map[string]any{"subject": subject, "channelID": e.channelID, "endUserID": e.endUserID})
}

func tkGet(t *testing.T, token string, id int64) tkTicketBody {
	t.Helper()
	var tk tkTicketBody
	wantStatus(t, client(t).Do(http.MethodGet, fmt.Sprintf("/api/Tickets/%d", id), token, nil), http.StatusOK, &tk)
	return tk
}

func tkList(t *testing.T, token, query string) listBody[tkTicketBody] {
	t.Helper()
	var l listBody[tkTicketBody]
	wantStatus(t, client(t).Do(http.MethodGet, "/api/Tickets"+query, token, nil), http.StatusOK, &l)
	return l
}

func tkIDs(l listBody[tkTicketBody]) []int64 {
	out := []int64{}
	for _, it := range l.Items {
		out = append(out, it.TicketID)
	}
	return out
}

func tkPut(t *testing.T, token string, id int64, body any) *e2ekit.Response {
	t.Helper()
	return client(t).Do(http.MethodPut, fmt.Sprintf("/api/Tickets/%d", id), token, body)
}

func tkBulk(t *testing.T, token string, body any) *e2ekit.Response {
	t.Helper()
	return client(t).Do(http.MethodPost, "/api/Tickets/bulk-update", token, body)
}

// tkIntegrationAccount adds an integration account to the tenant.
func tkIntegrationAccount(t *testing.T, tn tenant) int64 {
	t.Helper()
	var a struct {
		AccountID int64 `json:"accountID"`
	}
	wantStatus(t, client(t).Do(http.MethodPost, "/api/Accounts", tn.AdminToken, map[string]string{
		"email": "int-" + randid.Hex(4) + "@example.com", "password": "pw-" + randid.Hex(10), "name": "Bot", "role": "integration"}),
		http.StatusCreated, &a)
	return a.AccountID
}

// tkAddMessage writes a message into a ticket as the TicketMessages API
// will (indexed in English and exactly) and returns its id.
func tkAddMessage(t *testing.T, tn tenant, ticketID int64, sender, text string) int64 {
	t.Helper()
	var m struct {
		MessageID int64 `json:"messageID"`
	}
	wantStatus(t, client(t).Do(http.MethodPost, "/api/TicketMessages", tn.AgentToken,
		map[string]any{"ticketID": ticketID, "senderType": sender, "message": text}), http.StatusCreated, &m)
	return m.MessageID
}

func TestTkTicketsCreateReadUpdateDelete(t *testing.T) {
	t.Parallel()
	e := tkNewEnv(t)
	c := client(t)
	agent := accountID(t, e.tn.AgentToken)
	created := tkCreate(t, e.tn.AdminToken, map[string]any{"subject": "  Printer on fire ", "channelID": e.channelID,
		"endUserID": e.endUserID, "status": "pending", "customerRepID": agent,
		"customFieldsData": map[string]any{"floor": 3, "tags": []string{"hardware"}}})
	if created.Subject != "Printer on fire" || created.Status != "Pending" || created.IsClosed || created.ChannelID != e.channelID ||
		created.EndUserID != e.endUserID || created.CustomerRepID == nil || *created.CustomerRepID != agent ||
		len(created.Topics) != 0 || created.Topics == nil || created.AIFeedbackComments == nil || len(created.TicketToken) < 40 ||
		created.DateCreated != created.DateUpdated || !strings.HasSuffix(created.DateCreated, "Z") {
		t.Fatalf("created %+v", created)
	}
	var fields map[string]any
	if err := json.Unmarshal(created.CustomFieldsData, &fields); err != nil || fields["floor"] != 3.0 {
		t.Fatalf("customFieldsData %s", created.CustomFieldsData)
	}
	path := fmt.Sprintf("/api/Tickets/%d", created.TicketID)
	var got tkTicketBody
	wantStatus(t, c.Do(http.MethodGet, strings.ToLower(path), e.tn.AgentToken, nil), http.StatusOK, &got)
	if got.TicketID != created.TicketID || got.Subject != created.Subject || got.TicketToken != created.TicketToken ||
		got.DateCreated != created.DateCreated {
		t.Fatalf("get %+v, created %+v", got, created)
	}
	if l := tkList(t, e.tn.AgentToken, ""); l.TotalCount != 1 || l.TotalPages != 1 || l.Items[0].TicketID != created.TicketID {
		t.Fatalf("list %+v", l)
	}

	// Escalation comments of its messages come with the ticket.
	m := tkAddMessage(t, e.tn, created.TicketID, "AI", "Have you tried turning it off and on again?")
	exec(t, `INSERT INTO tickets.feedback_comments (customer_id, ticket_id, message_id, comment, email)
		VALUES ($1, $2, $3, 'Not helpful', 'lead@example.com')`, e.tn.CustomerID, created.TicketID, m)
	got = tkGet(t, e.tn.AgentToken, created.TicketID)
	if len(got.AIFeedbackComments) != 1 || got.AIFeedbackComments[0].MessageID != m || got.AIFeedbackComments[0].Comment != "Not helpful" ||
		got.AIFeedbackComments[0].Email != "lead@example.com" || !strings.HasSuffix(got.AIFeedbackComments[0].DateCreated, "Z") {
		t.Fatalf("feedback %+v", got.AIFeedbackComments)
	}
	if l := tkList(t, e.tn.AgentToken, ""); len(l.Items[0].AIFeedbackComments) != 1 {
		t.Fatalf("feedback in the list %+v", l.Items[0])
	}

	// PUT changes only what it names.
	other := createChannel(t, e.tn)
	wantStatus(t, tkPut(t, e.tn.AgentToken, created.TicketID, map[string]any{"subject": "Printer fixed", "channelID": other,
		"customFieldsData": map[string]any{"floor": 4}}), http.StatusNoContent, nil)
	got = tkGet(t, e.tn.AgentToken, created.TicketID)
	fields = nil
	if err := json.Unmarshal(got.CustomFieldsData, &fields); err != nil || len(fields) != 1 || fields["floor"] != 4.0 {
		t.Fatalf("customFieldsData after PUT %s", got.CustomFieldsData)
	}
	if got.Subject != "Printer fixed" || got.ChannelID != other || got.Status != "Pending" ||
		got.CustomerRepID == nil || got.DateUpdated == created.DateUpdated || got.DateCreated != created.DateCreated {
		t.Fatalf("after PUT %+v", got)
	}
	// A GET body sent back changes nothing it cannot.
	wantStatus(t, tkPut(t, e.tn.AgentToken, created.TicketID, got), http.StatusNoContent, nil)
	for _, step := range []struct {
		body   map[string]any
		status string
	}{
		{map[string]any{"isClosed": true}, "Closed"},
		{map[string]any{"isClosed": false}, "Open"},
		{map[string]any{"status": "RESOLVED"}, "Resolved"},
		{map[string]any{"status": "Closed", "isClosed": true}, "Closed"},
		{map[string]any{"status": "open"}, "Open"},
	} {
		wantStatus(t, tkPut(t, e.tn.AgentToken, created.TicketID, step.body), http.StatusNoContent, nil)
		if got = tkGet(t, e.tn.AgentToken, created.TicketID); got.Status != step.status || got.IsClosed != (step.status == "Closed") {
			t.Fatalf("after %v: %s %v", step.body, got.Status, got.IsClosed)
		}
	}
	wantStatus(t, tkPut(t, e.tn.AgentToken, created.TicketID, map[string]any{"customerRepID": nil}), http.StatusNoContent, nil)
	if got = tkGet(t, e.tn.AgentToken, created.TicketID); got.CustomerRepID != nil {
		t.Fatalf("unassigned %+v", got)
	}
	admin := accountID(t, e.tn.AdminToken)
	wantStatus(t, tkPut(t, e.tn.AgentToken, created.TicketID, map[string]any{"customerRepID": admin}), http.StatusNoContent, nil)
	if got = tkGet(t, e.tn.AgentToken, created.TicketID); got.CustomerRepID == nil || *got.CustomerRepID != admin {
		t.Fatalf("assigned to the admin %+v", got)
	}

	wantStatus(t, c.Do(http.MethodDelete, path, e.tn.AdminToken, nil), http.StatusNoContent, nil)
	wantProblem(t, c.Do(http.MethodGet, path, e.tn.AdminToken, nil), http.StatusNotFound, "")
	wantProblem(t, tkPut(t, e.tn.AdminToken, created.TicketID, map[string]any{"subject": "x"}), http.StatusNotFound, "")
	wantProblem(t, c.Do(http.MethodDelete, path, e.tn.AdminToken, nil), http.StatusNotFound, "")
	wantProblem(t, c.Do(http.MethodGet, path+"/summary", e.tn.AdminToken, nil), http.StatusNotFound, "")
	if l := tkList(t, e.tn.AgentToken, ""); l.TotalCount != 0 || len(l.Items) != 0 || l.TotalPages != 0 {
		t.Fatalf("list after delete %+v", l)
	}
	// The end user's ticket is gone, so the end user may go too.
	wantStatus(t, c.Do(http.MethodDelete, fmt.Sprintf("/api/EndUsers/%d", e.endUserID), e.tn.AdminToken, nil), http.StatusNoContent, nil)
	// Without a token nothing is answered but 401.
	wantProblem(t, c.Do(http.MethodGet, "/api/Tickets", "", nil), http.StatusUnauthorized, "")
	wantProblem(t, c.Do(http.MethodPost, "/api/Tickets/bulk-update", "", map[string]any{"ticketIDs": []int{1}, "action": "close"}),
		http.StatusUnauthorized, "")
}

func TestTkTicketsValidation(t *testing.T) {
	t.Parallel()
	e := tkNewEnv(t)
	other := tkNewEnv(t)
	c := client(t)
	deleted := createChannel(t, e.tn)
	deleteChannel(t, e.tn, deleted)
	integration := tkIntegrationAccount(t, e.tn)
	foreignAgent := accountID(t, other.tn.AgentToken)
	base := func(kv ...any) map[string]any {
		m := map[string]any{"subject": "Valid", "channelID": e.channelID, "endUserID": e.endUserID}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
			} else {
				m[kv[i].(string)] = kv[i+1]
			}
		}
		return m
	}
	cases := []struct {
		name  string
		body  any
		field string
	}{
		{"subject missing", base("subject", nil), "subject"},
		{"subject blank", base("subject", "   "), "subject"},
		{"subject too long", base("subject", strings.Repeat("s", 501)), "subject"},
		{"subject two lines", base("subject", "a\nb"), "subject"},
		{"subject not a string", base("subject", 5), "subject"},
		{"channelID missing", base("channelID", nil), "channelID"},
		{"channelID deleted", base("channelID", deleted), "channelID"},
		{"channelID another customer's", base("channelID", other.channelID), "channelID"},
		{"channelID unknown", base("channelID", 999999999), "channelID"},
		{"channelID a string", base("channelID", "1"), "channelID"},
		{"endUserID missing", base("endUserID", nil), "endUserID"},
		{"endUserID another customer's", base("endUserID", other.endUserID), "endUserID"},
		{"endUserID unknown", base("endUserID", 999999999), "endUserID"},
		{"status unknown", base("status", "Done"), "status"},
		{"customerRepID integration", base("customerRepID", integration), "customerRepID"},
		{"customerRepID another customer's", base("customerRepID", foreignAgent), "customerRepID"},
		{"customerRepID unknown", base("customerRepID", 999999999), "customerRepID"},
		{"customFieldsData array", base("customFieldsData", []int{1}), "customFieldsData"},
		{"customFieldsData too large", base("customFieldsData", map[string]string{"v": strings.Repeat("x", 16<<10)}), "customFieldsData"},
		{"malformed JSON", `{"subject": "A"`, ""},
		{"not an object", `[{"subject": "A"}]`, ""},
	}
	for _, tc := range cases {
		t.Run("POST "+tc.name, func(t *testing.T) {
			wantProblem(t, c.Do(http.MethodPost, "/api/Tickets", e.tn.AgentToken, tc.body), http.StatusBadRequest, tc.field)
		})
	}
	tk := e.tkOpen(t, "Target")
	closed := tkCreate(t, e.tn.AgentToken, base("status", "Closed"))
	putCases := []struct {
		name   string
		id     int64
		body   any
		status int
		field  string
	}{
		{"nothing to change", tk.TicketID, map[string]any{}, 400, ""},
		{"only read-only fields", tk.TicketID, map[string]any{"ticketID": 5, "endUserID": 7}, 400, ""},
		{"subject blank", tk.TicketID, map[string]any{"subject": ""}, 400, "subject"},
		{"status unknown", tk.TicketID, map[string]any{"status": "gone"}, 400, "status"},
		{"status contradicts isClosed", tk.TicketID, map[string]any{"status": "Open", "isClosed": true}, 400, "isClosed"},
		{"isClosed not a boolean", tk.TicketID, map[string]any{"isClosed": "yes"}, 400, "isClosed"},
		{"customerRepID integration", tk.TicketID, map[string]any{"customerRepID": integration}, 400, "customerRepID"},
		{"customerRepID another customer's", tk.TicketID, map[string]any{"customerRepID": foreignAgent}, 400, "customerRepID"},
		{"customerRepID a string", tk.TicketID, map[string]any{"customerRepID": "me"}, 400, "customerRepID"},
		{"channelID deleted", tk.TicketID, map[string]any{"channelID": deleted}, 400, "channelID"},
		{"channelID another customer's", tk.TicketID, map[string]any{"channelID": other.channelID}, 400, "channelID"},
		{"customFieldsData a string", tk.TicketID, map[string]any{"customFieldsData": "x"}, 400, "customFieldsData"},
		{"a Closed ticket only reopens", closed.TicketID, map[string]any{"status": "Escalated"}, 409, "status"},
		{"nor resolves", closed.TicketID, map[string]any{"status": "resolved"}, 409, "status"},
	}
	for _, tc := range putCases {
		t.Run("PUT "+tc.name, func(t *testing.T) {
			wantProblem(t, tkPut(t, e.tn.AgentToken, tc.id, tc.body), tc.status, tc.field)
		})
	}
	if got := tkGet(t, e.tn.AgentToken, tk.TicketID); got.Subject != "Target" || got.Status != "Open" || got.ChannelID != e.channelID {
		t.Fatalf("refused updates changed the ticket: %+v", got)
	}
	for _, p := range []string{"/api/Tickets/abc", "/api/Tickets/0", "/api/Tickets/-1", "/api/Tickets/01", "/api/Tickets/abc/summary"} {
		wantProblem(t, c.Do(http.MethodGet, p, e.tn.AgentToken, nil), http.StatusBadRequest, "id")
	}
	wantProblem(t, tkPut(t, e.tn.AgentToken, tk.TicketID, "not json"), http.StatusBadRequest, "")
	r := client(t).DoRequest(tkRawRequest(t, http.MethodPost, "/api/Tickets", e.tn.AgentToken, "text/plain", `{"subject":"x"}`))
	wantProblem(t, r, http.StatusUnsupportedMediaType, "")
	if l := tkList(t, e.tn.AgentToken, ""); l.TotalCount != 2 {
		t.Fatalf("refused creates made tickets: %d", l.TotalCount)
	}
}

func tkRawRequest(t *testing.T, method, path, token, contentType, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, stk.HTTPSURL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}

func TestTkTicketsListFiltersAndSorts(t *testing.T) {
	t.Parallel()
	e := tkNewEnv(t)
	tn := e.tn
	ch2 := createChannel(t, tn)
	u2 := createEndUser(t, tn.AgentToken, map[string]any{"name": "Bob"}).EndUserID
	agent := accountID(t, tn.AgentToken)
	topic := createTopic(t, tn, "Billing "+randid.Hex(3))
	specs := []struct {
		subject string
		channel int64
		user    int64
		status  string
		rep     bool
		day     int
	}{
		{"Alpha", e.channelID, e.endUserID, "Open", true, 1},
		{"Bravo", e.channelID, e.endUserID, "Pending", false, 2},
		{"Charlie", ch2, u2, "Closed", true, 3},
		{"Delta", ch2, u2, "Escalated", false, 4},
		{"Echo", ch2, e.endUserID, "Resolved", false, 5},
	}
	var ids []int64
	for _, s := range specs {
		body := map[string]any{"subject": s.subject, "channelID": s.channel, "endUserID": s.user, "status": s.status}
		if s.rep {
			body["customerRepID"] = agent
		}
		id := tkCreate(t, tn.AgentToken, body).TicketID
		exec(t, `UPDATE tickets.tickets SET created_at = $2, updated_at = $3 WHERE ticket_id = $1`, id,
			time.Date(2026, 1, s.day, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 10-s.day, 0, 0, 0, 0, time.UTC))
		ids = append(ids, id)
	}
	// A topic on a message of Delta.
	m := tkAddMessage(t, tn, ids[3], "EndUser", "The invoice total is wrong.")
	// The message touched Delta's dateUpdated; the sorts below want the
	// planned one.
	exec(t, `UPDATE tickets.tickets SET updated_at = $2 WHERE ticket_id = $1`, ids[3],
		time.Date(2026, 3, 10-specs[3].day, 0, 0, 0, 0, time.UTC))
	exec(t, `INSERT INTO tickets.topic_names (customer_id, topic_id, name) VALUES ($1, $2, 'Billing')`, tn.CustomerID, topic)
	exec(t, `INSERT INTO tickets.message_topics (customer_id, message_id, topic_id) VALUES ($1, $2, $3)`, tn.CustomerID, m, topic)
	rev := func(xs ...int64) []int64 { out := slices.Clone(xs); slices.Reverse(out); return out }
	cases := []struct {
		query string
		want  []int64
	}{
		{"", rev(ids...)},
		{"?sort=-dateCreated", rev(ids...)},
		{"?sort=dateCreated", ids},
		{"?SORT=DATECREATED", ids},
		{"?sort=dateUpdated", rev(ids...)},
		{"?sort=-dateUpdated", ids},
		{"?sort=ticketID", ids},
		{"?sort=-ticketId", rev(ids...)},
		{"?status=pending", []int64{ids[1]}},
		{"?Status=ESCALATED", []int64{ids[3]}},
		{"?isClosed=true", []int64{ids[2]}},
		{"?isClosed=false", rev(ids[0], ids[1], ids[3], ids[4])},
		{"?isClosed=true&status=Open", []int64{}},
		{"?channelId=" + fmt.Sprint(ch2), rev(ids[2], ids[3], ids[4])},
		{"?channelID=" + fmt.Sprint(ch2) + "&status=Closed", []int64{ids[2]}},
		{"?endUserId=" + fmt.Sprint(u2), rev(ids[2], ids[3])},
		{"?customerRepId=" + fmt.Sprint(agent), rev(ids[0], ids[2])},
		{"?topicId=" + fmt.Sprint(topic), []int64{ids[3]}},
		{"?createdFrom=2026-01-04", rev(ids[3], ids[4])},
		{"?createdTo=2026-01-02", rev(ids[0], ids[1])},
		{"?createdFrom=2026-01-02T12:00:00Z&createdTo=2026-01-03T12:00:00Z", rev(ids[1], ids[2])},
		{"?createdFrom=2026-01-02T12:00:00.000001Z", rev(ids[2], ids[3], ids[4])},
		{"?createdFrom=" + url.QueryEscape("2026-01-03T13:00:00+01:00") + "&createdTo=" + url.QueryEscape("2026-01-03T13:00:00+01:00"), []int64{ids[2]}},
		{"?createdFrom=2026-01-06", []int64{}},
		{"?unknownFilter=1", rev(ids...)},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			l := tkList(t, tn.AgentToken, tc.query)
			if got := tkIDs(l); !slices.Equal(got, tc.want) || l.TotalCount != len(tc.want) {
				t.Fatalf("got %v (total %d), want %v", got, l.TotalCount, tc.want)
			}
		})
	}
	if l := tkList(t, tn.AgentToken, "?topicId="+fmt.Sprint(topic)); !slices.Equal(l.Items[0].Topics, []string{"Billing"}) {
		t.Fatalf("topics %v", l.Items[0].Topics)
	}
	bad := []struct{ query, param string }{
		{"?status=done", "status"},
		{"?status=Open&status=Closed", "status"},
		{"?isClosed=maybe", "isClosed"},
		{"?isClosed=1", "isClosed"},
		{"?channelId=abc", "channelId"},
		{"?endUserId=0", "endUserId"},
		{"?customerRepId=-1", "customerRepId"},
		{"?topicId=1.5", "topicId"},
		{"?createdFrom=yesterday", "createdFrom"},
		{"?createdTo=2026-13-01", "createdTo"},
		{"?createdFrom=2026-01-05&createdTo=2026-01-04", "createdTo"},
		{"?sort=subject", "sort"},
		{"?sort=--ticketID", "sort"},
		{"?q=" + strings.Repeat("a", 501), "q"},
		{"?q=a%00b", "q"},
		{"?pageSize=101", "pageSize"},
		{"?pageSize=0", "pageSize"},
		{"?pageNumber=0", "pageNumber"},
		{"?pageNumber=x", "pageNumber"},
	}
	for _, b := range bad {
		t.Run("bad "+b.query[:min(len(b.query), 40)], func(t *testing.T) {
			wantProblem(t, client(t).Do(http.MethodGet, "/api/Tickets"+b.query, tn.AgentToken, nil), http.StatusBadRequest, b.param)
		})
	}
}

func TestTkTicketsPaging(t *testing.T) {
	t.Parallel()
	e := tkNewEnv(t)
	var ids []int64
	for i := range 5 {
		ids = append(ids, e.tkOpen(t, fmt.Sprintf("Ticket %d", i)).TicketID)
	}
	slices.Reverse(ids) // newest first
	cases := []struct {
		query string
		want  []int64
		pages int
	}{
		{"?pageSize=2", ids[:2], 3},
		{"?pageSize=2&pageNumber=2", ids[2:4], 3},
		{"?pageSize=2&pageNumber=3", ids[4:], 3},
		{"?pageSize=2&pageNumber=4", []int64{}, 3},
		{"?pageNumber=1000000", []int64{}, 1},
		{"?pageSize=100", ids, 1},
		{"?pageSize=5", ids, 1},
		{"?pageSize=1&pageNumber=5", ids[4:], 5},
		{"?pageSize=2&q=ticket", ids[:2], 3},
		{"?pageSize=2&pageNumber=3&status=open", ids[4:], 3},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			l := tkList(t, e.tn.AgentToken, tc.query)
			if got := tkIDs(l); !slices.Equal(got, tc.want) || l.TotalCount != 5 || l.TotalPages != tc.pages {
				t.Fatalf("got %v total %d pages %d, want %v and %d pages", got, l.TotalCount, l.TotalPages, tc.want, tc.pages)
			}
		})
	}
}

// Full-text search: stemmed words of the subject, words only in a message,
// phrases, and never another customer's tickets.
func TestTkTicketsSearch(t *testing.T) {
	t.Parallel()
	e := tkNewEnv(t)
	other := tkNewEnv(t)
	refund := e.tkOpen(t, "Refund for my last order")
	login := e.tkOpen(t, "Cannot log in")
	german := e.tkOpen(t, "Die Rechnung ist falsch und die Lieferung kam viel zu spät")
	foreign := other.tkOpen(t, "Refund for my last order")
	tkAddMessage(t, e.tn, login.TicketID, "EndUser", "The app shows error XJ-42 whenever I try the password.")
	tkAddMessage(t, other.tn, foreign.TicketID, "EndUser", "error XJ-42 here too")
	tkAddMessage(t, e.tn, refund.TicketID, "Agent", "We have refunded the shipping costs.")
	cases := []struct {
		q    string
		want []int64
	}{
		{"refunds", []int64{refund.TicketID}},
		{"REFUNDED", []int64{refund.TicketID}},
		{"XJ-42", []int64{login.TicketID}},
		{"password", []int64{login.TicketID}},
		{"shipping", []int64{refund.TicketID}},
		{`"log in"`, []int64{login.TicketID}},
		{"refund or password", []int64{login.TicketID, refund.TicketID}},
		// Each text (the subject, every message) is matched on its own: the
		// subject has no "shipping".
		{"refund -shipping", []int64{refund.TicketID}},
		{"costs -shipping", []int64{}},
		{"Rechnungen falsch", []int64{german.TicketID}},
		{"Lieferung", []int64{german.TicketID}},
		{"zebra", []int64{}},
		{"!!!", []int64{}},
		{"   ", []int64{german.TicketID, login.TicketID, refund.TicketID}},
	}
	for _, tc := range cases {
		t.Run(tc.q, func(t *testing.T) {
			l := tkList(t, e.tn.AgentToken, "?q="+url.QueryEscape(tc.q))
			if got := tkIDs(l); !slices.Equal(got, tc.want) || l.TotalCount != len(tc.want) {
				t.Fatalf("got %v (total %d), want %v", got, l.TotalCount, tc.want)
			}
		})
	}
	if l := tkList(t, e.tn.AgentToken, "?q=refund&status=Closed"); l.TotalCount != 0 {
		t.Fatalf("search and status %+v", l)
	}
	if l := tkList(t, other.tn.AgentToken, "?q=xj-42"); !slices.Equal(tkIDs(l), []int64{foreign.TicketID}) {
		t.Fatalf("other tenant %+v", tkIDs(l))
	}
	// A changed subject is searched under its new words.
	wantStatus(t, tkPut(t, e.tn.AgentToken, german.TicketID, map[string]any{"subject": "Printer jammed"}), http.StatusNoContent, nil)
	if l := tkList(t, e.tn.AgentToken, "?q=printers"); !slices.Equal(tkIDs(l), []int64{german.TicketID}) {
		t.Fatalf("new subject %v", tkIDs(l))
	}
	if l := tkList(t, e.tn.AgentToken, "?q=Lieferung"); l.TotalCount != 0 {
		t.Fatalf("old subject still found %v", tkIDs(l))
	}
}

// Another customer's ticket id is a 404 on every route that takes one.
func TestTkTicketsCrossTenant(t *testing.T) {
	t.Parallel()
	a := tkNewEnv(t)
	b := tkNewEnv(t)
	tk := a.tkOpen(t, "Mine")
	c := client(t)
	path := fmt.Sprintf("/api/Tickets/%d", tk.TicketID)
	for _, token := range []string{b.tn.AgentToken, b.tn.AdminToken} {
		wantProblem(t, c.Do(http.MethodGet, path, token, nil), http.StatusNotFound, "")
		wantProblem(t, c.Do(http.MethodGet, path+"/summary", token, nil), http.StatusNotFound, "")
		wantProblem(t, tkPut(t, token, tk.TicketID, map[string]any{"subject": "Yours"}), http.StatusNotFound, "")
		wantProblem(t, c.Do(http.MethodDelete, path, token, nil), http.StatusNotFound, "")
		wantProblem(t, tkBulk(t, token, map[string]any{"ticketIDs": []int64{tk.TicketID}, "action": "close"}), http.StatusNotFound, "ticketIDs")
	}
	if l := tkList(t, b.tn.AgentToken, ""); l.TotalCount != 0 {
		t.Fatalf("B sees %v", tkIDs(l))
	}
	if got := tkGet(t, a.tn.AgentToken, tk.TicketID); got.Subject != "Mine" || got.Status != "Open" {
		t.Fatalf("changed by another customer: %+v", got)
	}
}

// tkPostWithKey sends POST /api/Tickets with an Idempotency-Key.
func tkPostWithKey(t *testing.T, token, key string, body any) *e2ekit.Response {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req := tkRawRequest(t, http.MethodPost, "/api/Tickets", token, "application/json", string(data))
	req.Header.Set("Idempotency-Key", key)
	return client(t).DoRequest(req)
}

func TestTkTicketsIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := tkNewEnv(t)
	key := "tk-" + randid.Hex(8)
	body := map[string]any{"subject": "Once", "channelID": e.channelID, "endUserID": e.endUserID}
	first := tkPostWithKey(t, e.tn.AgentToken, key, body)
	var a, b tkTicketBody
	wantStatus(t, first, http.StatusCreated, &a)
	again := tkPostWithKey(t, e.tn.AgentToken, key, body)
	wantStatus(t, again, http.StatusCreated, &b)
	if b.TicketID != a.TicketID || again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(first.Body, again.Body) ||
		again.Header.Get("Location") != first.Header.Get("Location") {
		t.Fatalf("replay %s %v, first %s", again.Body, again.Header, first.Body)
	}
	body["subject"] = "Twice"
	wantProblem(t, tkPostWithKey(t, e.tn.AgentToken, key, body), http.StatusUnprocessableEntity, "")
	if l := tkList(t, e.tn.AgentToken, ""); l.TotalCount != 1 {
		t.Fatalf("%d tickets for one key", l.TotalCount)
	}
	// Ten at once with a new key: one ticket.
	key2 := "tk-" + randid.Hex(8)
	counts := e2ekit.Parallel(10, func() *e2ekit.Response { return tkPostWithKey(t, e.tn.AgentToken, key2, body) })
	if counts[http.StatusCreated] < 1 || counts[http.StatusCreated]+counts[http.StatusConflict] != 10 {
		t.Fatalf("statuses %v", counts)
	}
	if l := tkList(t, e.tn.AgentToken, ""); l.TotalCount != 2 {
		t.Fatalf("%d tickets after the parallel key", l.TotalCount)
	}
}

func TestTkTicketsBulkUpdate(t *testing.T) {
	t.Parallel()
	e := tkNewEnv(t)
	other := tkNewEnv(t)
	agent := accountID(t, e.tn.AgentToken)
	integration := tkIntegrationAccount(t, e.tn)
	open := e.tkOpen(t, "open")
	closed := tkCreate(t, e.tn.AgentToken, map[string]any{"subject": "closed", "channelID": e.channelID, "endUserID": e.endUserID,
		"status": "Closed"})
	pending := tkCreate(t, e.tn.AgentToken, map[string]any{"subject": "pending", "channelID": e.channelID, "endUserID": e.endUserID,
		"status": "Pending"})
	foreign := other.tkOpen(t, "foreign")
	all := []int64{open.TicketID, closed.TicketID, pending.TicketID}
	state := func() string {
		var parts []string
		for _, id := range all {
			g := tkGet(t, e.tn.AgentToken, id)
			parts = append(parts, fmt.Sprintf("%d:%s:%v:%s", id, g.Status, g.CustomerRepID != nil, g.DateUpdated))
		}
		return strings.Join(parts, ",")
	}
	before := state()
	// Refused wholesale: nothing changes.
	r := tkBulk(t, e.tn.AgentToken, map[string]any{"ticketIDs": []int64{open.TicketID, foreign.TicketID, 999999999}, "action": "close"})
	wantProblem(t, r, http.StatusNotFound, "ticketIDs")
	if msg := r.Problem(t).Errors["ticketIDs"]; msg != fmt.Sprintf("not found: %d, 999999999", foreign.TicketID) {
		t.Fatalf("errors.ticketIDs %q", msg)
	}
	r = tkBulk(t, e.tn.AgentToken, map[string]any{"ticketIDs": all, "action": "escalate"})
	wantProblem(t, r, http.StatusConflict, "ticketIDs")
	if msg := r.Problem(t).Errors["ticketIDs"]; !strings.HasSuffix(msg, fmt.Sprint(closed.TicketID)) {
		t.Fatalf("errors.ticketIDs %q", msg)
	}
	many := make([]int64, 501)
	for i := range many {
		many[i] = int64(i + 1)
	}
	for _, bad := range []struct {
		body  any
		field string
	}{
		{map[string]any{"ticketIDs": all, "action": "delete"}, "action"},
		{map[string]any{"ticketIDs": all}, "action"},
		{map[string]any{"ticketIDs": all, "action": "assign"}, "customerRepID"},
		{map[string]any{"ticketIDs": all, "action": "assign", "customerRepID": integration}, "customerRepID"},
		{map[string]any{"ticketIDs": all, "action": "assign", "customerRepID": accountID(t, other.tn.AgentToken)}, "customerRepID"},
		{map[string]any{"ticketIDs": []int64{}, "action": "close"}, "ticketIDs"},
		{map[string]any{"action": "close"}, "ticketIDs"},
		{map[string]any{"ticketIDs": many, "action": "close"}, "ticketIDs"},
		{map[string]any{"ticketIDs": []any{open.TicketID, "x"}, "action": "close"}, "ticketIDs"},
		{map[string]any{"ticketIDs": []int64{0}, "action": "close"}, "ticketIDs"},
		{map[string]any{"ticketIDs": all, "action": 3}, "action"},
		{`{"ticketIDs": [1], "action": "close"`, ""},
	} {
		wantProblem(t, tkBulk(t, e.tn.AgentToken, bad.body), http.StatusBadRequest, bad.field)
	}
	if state() != before {
		t.Fatalf("refused bulk updates changed tickets: %s, was %s", state(), before)
	}

	// close, with duplicates and the action in any case.
	wantStatus(t, tkBulk(t, e.tn.AgentToken, map[string]any{"ticketIDs": append(slices.Clone(all), open.TicketID), "action": "CLOSE"}),
		http.StatusNoContent, nil)
	for _, id := range all {
		if g := tkGet(t, e.tn.AgentToken, id); g.Status != "Closed" || !g.IsClosed {
			t.Fatalf("closed %+v", g)
		}
	}
	if l := tkList(t, e.tn.AgentToken, "?isClosed=true"); l.TotalCount != 3 {
		t.Fatalf("closed count %d", l.TotalCount)
	}
	wantStatus(t, tkBulk(t, e.tn.AgentToken, map[string]any{"ticketIDs": all, "action": "reopen"}), http.StatusNoContent, nil)
	wantStatus(t, tkBulk(t, e.tn.AgentToken, map[string]any{"ticketIDs": all[:2], "action": "escalate"}), http.StatusNoContent, nil)
	wantStatus(t, tkBulk(t, e.tn.AgentToken, map[string]any{"ticketIDs": all, "action": "assign", "customerRepID": agent}), http.StatusNoContent, nil)
	want := map[int64]string{open.TicketID: "Escalated", closed.TicketID: "Escalated", pending.TicketID: "Open"}
	for id, st := range want {
		if g := tkGet(t, e.tn.AgentToken, id); g.Status != st || g.CustomerRepID == nil || *g.CustomerRepID != agent {
			t.Fatalf("%d: %+v, want %s assigned", id, g, st)
		}
	}
	if l := tkList(t, e.tn.AgentToken, "?status=escalated"); l.TotalCount != 2 {
		t.Fatalf("escalated count %d", l.TotalCount)
	}
	if g := tkGet(t, other.tn.AgentToken, foreign.TicketID); g.Status != "Open" {
		t.Fatalf("foreign ticket %+v", g)
	}
}

// Bulk updates over overlapping ids at once, in different directions: every
// one finishes (204) and the counters agree with the tickets.
func TestTkTicketsBulkUpdateParallel(t *testing.T) {
	t.Parallel()
	e := tkNewEnv(t)
	var ids []int64
	for i := range 12 {
		ids = append(ids, e.tkOpen(t, fmt.Sprintf("bulk %d", i)).TicketID)
	}
	var next atomic.Int64
	counts := e2ekit.Parallel(16, func() *e2ekit.Response {
		i := int(next.Add(1))
		sub := slices.Clone(ids[i%6 : i%6+6])
		if i%2 == 0 {
			slices.Reverse(sub) // the server sorts them
		}
		return tkBulk(t, e.tn.AgentToken, map[string]any{"ticketIDs": sub, "action": []string{"close", "reopen"}[i%2]})
	})
	if counts[http.StatusNoContent] != 16 {
		t.Fatalf("statuses %v, want sixteen 204", counts)
	}
	total := 0
	for _, st := range []string{"Open", "Closed"} {
		total += tkList(t, e.tn.AgentToken, "?status="+st).TotalCount
	}
	l := tkList(t, e.tn.AgentToken, "?pageSize=100")
	real := map[string]int{}
	for _, it := range l.Items {
		real[it.Status]++
	}
	if total != 12 || l.TotalCount != 12 || real["Open"]+real["Closed"] != 12 ||
		tkList(t, e.tn.AgentToken, "?status=Open").TotalCount != real["Open"] {
		t.Fatalf("counters %d/%d, tickets %v", total, l.TotalCount, real)
	}
}

// Tickets created at once are all counted: the per-status counters stay
// exact under concurrent writers.
func TestTkTicketsParallelCreateCounts(t *testing.T) {
	t.Parallel()
	e := tkNewEnv(t)
	counts := e2ekit.Parallel(20, func() *e2ekit.Response {
		return client(t).Do(http.MethodPost, "/api/Tickets", e.tn.AgentToken,
			map[string]any{"subject": "Racer", "channelID": e.channelID, "endUserID": e.endUserID})
	})
	if counts[http.StatusCreated] != 20 {
		t.Fatalf("statuses %v", counts)
	}
	l := tkList(t, e.tn.AgentToken, "?pageSize=100")
	if l.TotalCount != 20 || len(l.Items) != 20 || tkList(t, e.tn.AgentToken, "?isClosed=false").TotalCount != 20 ||
		tkList(t, e.tn.AgentToken, "?status=Open&pageSize=1").TotalPages != 20 {
		t.Fatalf("list %d of %d", len(l.Items), l.TotalCount)
	}
	// And deleted at once.
	counts = e2ekit.Parallel(10, func() *e2ekit.Response {
		return client(t).Do(http.MethodDelete, fmt.Sprintf("/api/Tickets/%d", l.Items[0].TicketID), e.tn.AgentToken, nil)
	})
	if counts[http.StatusNoContent] != 1 || counts[http.StatusNotFound] != 9 {
		t.Fatalf("parallel deletes %v", counts)
	}
	if got := tkList(t, e.tn.AgentToken, "").TotalCount; got != 19 {
		t.Fatalf("%d after one delete", got)
	}
}

func TestTkTicketSummary(t *testing.T) {
	t.Parallel()
	e := tkNewEnv(t)
	empty := e.tkOpen(t, "Login fails on Android")
	var s string
	wantStatus(t, client(t).Do(http.MethodGet, fmt.Sprintf("/api/tickets/%d/SUMMARY", empty.TicketID), e.tn.AgentToken, nil), http.StatusOK, &s)
	if s != "Subject: Login fails on Android. No messages yet. Status: Open." {
		t.Fatalf("summary %q", s)
	}
	tk := e.tkOpen(t, "Double charge on order 4711")
	tkAddMessage(t, e.tn, tk.TicketID, "EndUser", "Hello, I was charged twice for order 4711 on my credit card. "+
		"Can you please refund the duplicate charge? Thanks, Ada")
	tkAddMessage(t, e.tn, tk.TicketID, "Agent", "Hi Ada! I have issued a refund of the duplicate charge for order 4711. "+
		"It reaches your credit card within 5 business days.")
	wantStatus(t, tkPut(t, e.tn.AgentToken, tk.TicketID, map[string]any{"status": "Resolved"}), http.StatusNoContent, nil)
	wantStatus(t, client(t).Do(http.MethodGet, fmt.Sprintf("/api/Tickets/%d/summary", tk.TicketID), e.tn.AdminToken, nil), http.StatusOK, &s)
	for _, want := range []string{"Subject: Double charge on order 4711 (2 messages).", "End user: ", "charged twice for order 4711",
		"Agent: ", "issued a refund", "Status: Resolved."} {
		if !strings.Contains(s, want) {
			t.Fatalf("summary %q lacks %q", s, want)
		}
	}
}

// ticket.created, .updated (with previousStatus) and .deleted reach
// EVENTS through the outbox, for this customer and ticket only.
func TestTkTicketEvents(t *testing.T) {
	t.Parallel()
	e := tkNewEnv(t)
	tk := e.tkOpen(t, "Evented")
	other := e.tkOpen(t, "Bulk evented")
	wantStatus(t, tkPut(t, e.tn.AgentToken, tk.TicketID, map[string]any{"status": "Pending"}), http.StatusNoContent, nil)
	wantStatus(t, tkPut(t, e.tn.AgentToken, tk.TicketID, map[string]any{"subject": "Evented again"}), http.StatusNoContent, nil)
	wantStatus(t, tkBulk(t, e.tn.AgentToken, map[string]any{"ticketIDs": []int64{tk.TicketID, other.TicketID}, "action": "close"}),
		http.StatusNoContent, nil)
	wantStatus(t, client(t).Do(http.MethodDelete, fmt.Sprintf("/api/Tickets/%d", tk.TicketID), e.tn.AgentToken, nil), http.StatusNoContent, nil)

	type seen struct {
		typ  string
		data contracts.TicketChanged
	}
	var got []seen
	deadline := time.Now().Add(10 * time.Second)
	for {
		got = nil
		for _, typ := range []string{contracts.EventTicketCreated, contracts.EventTicketUpdated, contracts.EventTicketDeleted} {
			for _, data := range backends.Messages(t, contracts.StreamEvents, contracts.EventSubject(typ)) {
				var ev contracts.Event[contracts.TicketChanged]
				if json.Unmarshal(data, &ev) == nil && ev.CustomerID == e.tn.CustomerID && ev.Data.TicketID == tk.TicketID {
					got = append(got, seen{ev.Type, ev.Data})
				}
			}
		}
		if len(got) == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events after 10 s: %+v", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// By type: created, three updates in order, deleted.
	if got[0].typ != contracts.EventTicketCreated || got[0].data.Subject != "Evented" || got[0].data.Status != "Open" ||
		got[0].data.ChannelID != e.channelID || got[0].data.EndUserID != e.endUserID {
		t.Fatalf("created %+v", got[0])
	}
	if u := got[1].data; u.Status != "Pending" || u.PreviousStatus != "Open" {
		t.Fatalf("first update %+v", u)
	}
	if u := got[2].data; u.Subject != "Evented again" || u.PreviousStatus != "" || u.Status != "Pending" {
		t.Fatalf("second update %+v", u)
	}
	if u := got[3].data; u.Status != "Closed" || u.PreviousStatus != "Pending" || !u.IsClosed {
		t.Fatalf("bulk update %+v", u)
	}
	if got[4].typ != contracts.EventTicketDeleted || got[4].data.Subject != "Evented again" || got[4].data.Status != "Closed" {
		t.Fatalf("deleted %+v", got[4])
	}
}

// tkCursorPage is a page of tickets with its keyset cursor.
type tkCursorPage struct {
	Items      []tkTicketBody `json:"items"`
	TotalCount int            `json:"totalCount"`
	TotalPages int            `json:"totalPages"`
	NextCursor *string        `json:"nextCursor"`
}

func tkCursorList(t *testing.T, token, query string) tkCursorPage {
	t.Helper()
	var l tkCursorPage
	wantStatus(t, client(t).Do(http.MethodGet, "/api/Tickets"+query, token, nil), http.StatusOK, &l)
	return l
}

// Keyset paging through the gateway: following nextCursor walks the same
// tickets as the page numbers, in every sort and with filters, and ends
// with a null cursor; a cursor is refused (400 naming it) by another
// customer, other filters, another sort or when altered, and pageNumber
// with a cursor is a 400 naming pageNumber.
func TestTkTicketsCursor(t *testing.T) {
	t.Parallel()
	e := tkNewEnv(t)
	b := tkNewEnv(t)
	for i := range 5 {
		e.tkOpen(t, fmt.Sprintf("Ticket %d", i))
		b.tkOpen(t, fmt.Sprintf("Ticket %d", i))
	}
	token := e.tn.AgentToken
	for _, filter := range []string{"", "&sort=ticketID", "&sort=-dateUpdated&status=open", "&q=ticket&sort=dateCreated"} {
		t.Run(filter, func(t *testing.T) {
			want := tkIDs(tkList(t, token, "?pageSize=100"+filter))
			if len(want) != 5 {
				t.Fatalf("%d tickets", len(want))
			}
			var got []int64
			l := tkCursorList(t, token, "?pageSize=2"+filter)
			for range 5 {
				if l.TotalCount != 5 || l.TotalPages != 3 {
					t.Fatalf("total %d pages %d", l.TotalCount, l.TotalPages)
				}
				for _, it := range l.Items {
					got = append(got, it.TicketID)
				}
				if l.NextCursor == nil {
					break
				}
				l = tkCursorList(t, token, "?pageSize=2&cursor="+url.QueryEscape(*l.NextCursor)+filter)
			}
			if !slices.Equal(got, want) || l.NextCursor != nil {
				t.Fatalf("cursor pages %v (last cursor %v), want %v", got, l.NextCursor, want)
			}
		})
	}
	first := tkCursorList(t, token, "?pageSize=2")
	if first.NextCursor == nil {
		t.Fatal("no cursor on the first page")
	}
	cur := url.QueryEscape(*first.NextCursor)
	c := client(t)
	wantProblem(t, c.Do(http.MethodGet, "/api/Tickets?cursor="+cur, b.tn.AgentToken, nil), http.StatusBadRequest, "cursor")
	wantProblem(t, c.Do(http.MethodGet, "/api/Tickets?status=open&cursor="+cur, token, nil), http.StatusBadRequest, "cursor")
	wantProblem(t, c.Do(http.MethodGet, "/api/Tickets?sort=dateCreated&cursor="+cur, token, nil), http.StatusBadRequest, "cursor")
	wantProblem(t, c.Do(http.MethodGet, "/api/Tickets?cursor="+cur+"x", token, nil), http.StatusBadRequest, "cursor")
	wantProblem(t, c.Do(http.MethodGet, "/api/Tickets?cursor=%25%00", token, nil), http.StatusBadRequest, "")
	wantProblem(t, c.Do(http.MethodGet, "/api/Tickets?cursor=bm90IGEgY3Vyc29y", token, nil), http.StatusBadRequest, "cursor")
	wantProblem(t, c.Do(http.MethodGet, "/api/Tickets?pageNumber=2&cursor="+cur, token, nil), http.StatusBadRequest, "pageNumber")
	// The cursor's page: the tickets after the first page, any page size.
	all := tkIDs(tkList(t, token, "?pageSize=100"))
	if got := tkIDs(tkList(t, token, "?pageSize=100&cursor="+cur)); !slices.Equal(got, all[2:]) {
		t.Fatalf("after the cursor %v, want %v", got, all[2:])
	}
}
