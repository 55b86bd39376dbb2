package e2etickets

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
)

// The TicketMessages API (messages_test.go and msg_*_test.go): every
// top-level identifier starts with msg.

const msgPath = "/api/TicketMessages"

type msgTopic struct {
	TicketMessageTopicID int64  `json:"ticketMessageTopicID"`
	TopicID              int64  `json:"topicID"`
	TopicName            string `json:"topicName"`
}

type msgBody struct {
	MessageID       int64      `json:"messageID"`
	TicketID        int64      `json:"ticketID"`
	DateCreated     string     `json:"dateCreated"`
	DateUpdated     string     `json:"dateUpdated"`
	SenderType      string     `json:"senderType"`
	SenderAccountID *int64     `json:"senderAccountID"`
	Message         string     `json:"message"`
	Topics          []msgTopic `json:"topics"`
	AIReply         struct {
		Text        *string `json:"text"`
		Status      string  `json:"status"`
		DateCreated *string `json:"dateCreated"`
	} `json:"aiReply"`
	CustomFieldsData map[string]any `json:"customFieldsData"`
	IsEscalated      bool           `json:"isEscalated"`
	Attachments      int            `json:"attachments"`
}

// msgWorld is a tenant with a live channel and an end user.
type msgWorld struct {
	tn        tenant
	channelID int64
	endUserID int64
}

func msgNewWorld(t *testing.T) msgWorld {
	t.Helper()
	tn := newTenant(t)
	u := createEndUser(t, tn.AgentToken, map[string]any{"name": "Writer " + randid.Hex(3)})
	return msgWorld{tn: tn, channelID: createChannel(t, tn), endUserID: u.EndUserID}
}

func msgID(id int64) string { return fmt.Sprintf("%s/%d", msgPath, id) }

// msgCreate posts a message and checks the 201 and its Location.
func msgCreate(t *testing.T, token string, body any) msgBody {
	t.Helper()
	r := client(t).Do(http.MethodPost, msgPath, token, body)
	var m msgBody
	wantStatus(t, r, http.StatusCreated, &m)
	if r.Header.Get("Location") != msgID(m.MessageID) {
		t.Fatalf("Location %q for %d", r.Header.Get("Location"), m.MessageID)
	}
	return m
}

// open opens a ticket with a first end-user message.
func (w msgWorld) open(t *testing.T, text string) msgBody {
	t.Helper()
	return msgCreate(t, w.tn.AgentToken, map[string]any{"message": text, "subject": "Subject " + randid.Hex(3),
		"channelID": w.channelID, "endUserID": w.endUserID})
}

// add adds a message of sender to a ticket.
func (w msgWorld) add(t *testing.T, ticketID int64, sender, text string) msgBody {
	t.Helper()
	return msgCreate(t, w.tn.AgentToken, map[string]any{"ticketID": ticketID, "message": text, "senderType": sender})
}

func msgGet(t *testing.T, token string, id int64) msgBody {
	t.Helper()
	var m msgBody
	wantStatus(t, client(t).Do(http.MethodGet, msgID(id), token, nil), http.StatusOK, &m)
	return m
}

func msgList(t *testing.T, token, query string) listBody[msgBody] {
	t.Helper()
	var l listBody[msgBody]
	wantStatus(t, client(t).Do(http.MethodGet, msgPath+query, token, nil), http.StatusOK, &l)
	return l
}

// msgTicketStatus reads a ticket's status from the database (the Tickets
// API is built beside this one).
func msgTicketStatus(t *testing.T, ticketID int64) string {
	t.Helper()
	var st string
	if err := backends.DB.QueryRow(t.Context(), `SELECT status FROM tickets.tickets WHERE ticket_id = $1`, ticketID).Scan(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func msgSetTicketStatus(t *testing.T, ticketID int64, st string) {
	t.Helper()
	exec(t, `UPDATE tickets.tickets SET status = $2 WHERE ticket_id = $1`, ticketID, st)
}

// msgCount counts the customer's rows of a tickets table.
func msgCount(t *testing.T, table string, customerID int64) int {
	t.Helper()
	var n int
	if err := backends.DB.QueryRow(t.Context(), `SELECT count(*) FROM tickets.`+table+` WHERE customer_id = $1`, customerID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// msgEvents waits until match accepts want events of type typ of the
// customer (within 10 s) and returns them in stream order. It then waits
// until the tickets outbox holds none of the customer's events (all those
// written so far are on the stream) and fails if more came: an event
// written after the expected ones must not pass unseen.
func msgEvents[T any](t *testing.T, typ string, customerID int64, want int, match func(T) bool) []T {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	read := func() []T { return e2ekit.Events(t, backends, typ, customerID, match) }
	for {
		out := read()
		if len(out) >= want {
			e2ekit.Eventually(t, 10*time.Second, "the customer's events relayed from the tickets outbox", func() bool {
				return msgOutboxRows(t, customerID) == 0
			})
			if out = read(); len(out) != want {
				t.Fatalf("%d %s events, want %d: %+v", len(out), typ, want, out)
			}
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s events after 10 s, want %d: %+v", len(out), typ, want, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// msgOutboxRows counts the customer's events not yet relayed from the
// tickets outbox (the relay deletes what it published).
func msgOutboxRows(t *testing.T, customerID int64) int {
	t.Helper()
	var n int
	if err := backends.DB.QueryRow(t.Context(), `SELECT count(*) FROM tickets.outbox
		WHERE (convert_from(data, 'UTF8')::jsonb->>'customerID')::bigint = $1`, customerID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// msgSend sends a request with a body of the given content type.
func msgSend(t *testing.T, method, path, token, contentType, body string, header ...string) *e2ekit.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, stk.HTTPSURL+path, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return client(t).DoRequest(req)
}

func TestMsgCreateAndGet(t *testing.T) {
	t.Parallel()
	w := msgNewWorld(t)
	c := client(t)

	first := msgCreate(t, w.tn.AgentToken, map[string]any{"message": "  My order has not arrived  ", "subject": "Where is my order",
		"channelID": w.channelID, "endUserID": w.endUserID, "customFieldsData": map[string]any{"order": "A-1"}})
	if first.TicketID == 0 || first.Message != "My order has not arrived" || first.SenderType != "EndUser" ||
		first.SenderAccountID != nil || len(first.Topics) != 0 || first.AIReply.Status != "none" || first.AIReply.Text != nil ||
		first.AIReply.DateCreated != nil || first.CustomFieldsData["order"] != "A-1" || first.IsEscalated || first.Attachments != 0 {
		t.Fatalf("first message %+v", first)
	}
	if msgTicketStatus(t, first.TicketID) != "Open" {
		t.Fatalf("new ticket %s", msgTicketStatus(t, first.TicketID))
	}
	var ticketFields []byte
	if err := backends.DB.QueryRow(t.Context(), `SELECT custom_fields FROM tickets.tickets WHERE ticket_id = $1`, first.TicketID).Scan(&ticketFields); err != nil ||
		!strings.Contains(string(ticketFields), `"A-1"`) {
		t.Fatalf("ticket custom fields %s %v", ticketFields, err)
	}
	got := msgGet(t, w.tn.AdminToken, first.MessageID)
	if got.MessageID != first.MessageID || got.Message != first.Message || got.DateCreated != first.DateCreated {
		t.Fatalf("GET %+v, created %+v", got, first)
	}

	agent := w.add(t, first.TicketID, "agent", "We are on it")
	if agent.SenderType != "Agent" || agent.SenderAccountID == nil || *agent.SenderAccountID <= 0 || agent.TicketID != first.TicketID {
		t.Fatalf("agent message %+v", agent)
	}
	var me struct {
		Account struct {
			AccountID int64 `json:"accountID"`
		} `json:"account"`
	}
	wantStatus(t, c.Do(http.MethodGet, "/api/Customers/me", w.tn.AgentToken, nil), http.StatusOK, &me)
	if *agent.SenderAccountID != me.Account.AccountID {
		t.Fatalf("senderAccountID %d, the caller is %d", *agent.SenderAccountID, me.Account.AccountID)
	}
	if ai := w.add(t, first.TicketID, "AI", "Automatic answer"); ai.SenderAccountID != nil {
		t.Fatalf("AI message %+v", ai)
	}

	// Validation: every problem names its field.
	other := newTenant(t)
	otherUser := createEndUser(t, other.AgentToken, map[string]any{"name": "Not yours"})
	deleted := createChannel(t, w.tn)
	deleteChannel(t, w.tn, deleted)
	for _, tc := range []struct {
		name   string
		body   any
		status int
		fields []string
	}{
		{"empty object", `{}`, 400, []string{"message", "subject", "channelID", "endUserID"}},
		{"blank message into a ticket", map[string]any{"ticketID": first.TicketID, "message": "  "}, 400, []string{"message"}},
		{"unknown sender type", map[string]any{"ticketID": first.TicketID, "message": "x", "senderType": "Robot"}, 400, []string{"senderType"}},
		{"ticket fields with a ticket", map[string]any{"ticketID": first.TicketID, "message": "x", "subject": "s", "endUserID": w.endUserID},
			400, []string{"subject", "endUserID"}},
		{"ticketID as a string", fmt.Sprintf(`{"ticketID":"%d","message":"x"}`, first.TicketID), 400, []string{"ticketID"}},
		{"ticketID zero", map[string]any{"ticketID": 0, "message": "x"}, 400, []string{"ticketID"}},
		{"ticketID negative", map[string]any{"ticketID": -4, "message": "x"}, 400, []string{"ticketID"}},
		{"custom fields not an object", map[string]any{"ticketID": first.TicketID, "message": "x", "customFieldsData": []int{1}}, 400, []string{"customFieldsData"}},
		{"message not a string", map[string]any{"ticketID": first.TicketID, "message": 5}, 400, []string{"message"}},
		{"message with a control character", map[string]any{"ticketID": first.TicketID, "message": "a\u0007b"}, 400, []string{"message"}},
		{"subject too long", map[string]any{"message": "x", "subject": strings.Repeat("s", 501), "channelID": w.channelID, "endUserID": w.endUserID},
			400, []string{"subject"}},
		{"another customer's end user", map[string]any{"message": "x", "subject": "s", "channelID": w.channelID, "endUserID": otherUser.EndUserID},
			400, []string{"endUserID"}},
		{"a deleted channel", map[string]any{"message": "x", "subject": "s", "channelID": deleted, "endUserID": w.endUserID}, 400, []string{"channelID"}},
		{"a channel that does not exist", map[string]any{"message": "x", "subject": "s", "channelID": 1 << 50, "endUserID": w.endUserID}, 400, []string{"channelID"}},
		{"bad message and bad channel", map[string]any{"message": "", "subject": "s", "channelID": deleted, "endUserID": w.endUserID},
			400, []string{"message", "channelID"}},
		{"malformed JSON", `{"message":`, 400, nil},
		{"an array", `[]`, 400, nil},
		{"a ticket that does not exist", map[string]any{"ticketID": 1 << 50, "message": "x"}, 404, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.Do(http.MethodPost, msgPath, w.tn.AgentToken, tc.body)
			wantStatus(t, r, tc.status, nil)
			p := r.Problem(t)
			for _, f := range tc.fields {
				if p.Errors[f] == "" {
					t.Fatalf("no errors.%s: %s", f, r.String())
				}
			}
		})
	}
	// Another customer cannot write into the ticket.
	wantStatus(t, c.Do(http.MethodPost, msgPath, other.AgentToken, map[string]any{"ticketID": first.TicketID, "message": "x"}),
		http.StatusNotFound, nil)
	wantStatus(t, msgSend(t, http.MethodPost, msgPath, w.tn.AgentToken, "text/plain", `{"message":"x"}`), http.StatusUnsupportedMediaType, nil)
	// Nothing of the refused requests was written: one ticket, three messages.
	if n, m := msgCount(t, "tickets", w.tn.CustomerID), msgCount(t, "ticket_messages", w.tn.CustomerID); n != 1 || m != 3 {
		t.Fatalf("%d tickets and %d messages", n, m)
	}
	if msgCount(t, "tickets", other.CustomerID) != 0 {
		t.Fatal("the other customer has tickets")
	}
	// GET of ids that are no message.
	wantProblem(t, c.Do(http.MethodGet, msgPath+"/01", w.tn.AgentToken, nil), http.StatusBadRequest, "id")
	wantProblem(t, c.Do(http.MethodGet, msgPath+"/abc", w.tn.AgentToken, nil), http.StatusBadRequest, "id")
	wantProblem(t, c.Do(http.MethodGet, msgID(1<<50), w.tn.AgentToken, nil), http.StatusNotFound, "")
	wantProblem(t, c.Do(http.MethodGet, msgID(first.MessageID), "", nil), http.StatusUnauthorized, "")
	// Paths are case-insensitive.
	var lower msgBody
	wantStatus(t, c.Do(http.MethodGet, fmt.Sprintf("/api/ticketmessages/%d", first.MessageID), w.tn.AgentToken, nil), http.StatusOK, &lower)
	if lower.MessageID != first.MessageID {
		t.Fatalf("%+v", lower)
	}
	// ticket.created and ticket.message.created reached EVENTS.
	msgEvents(t, contracts.EventMessageCreated, w.tn.CustomerID, 3, func(d contracts.MessageChanged) bool { return d.TicketID == first.TicketID })
	msgEvents(t, contracts.EventTicketCreated, w.tn.CustomerID, 1, func(d contracts.TicketChanged) bool { return d.TicketID == first.TicketID })
}

func TestMsgList(t *testing.T) {
	t.Parallel()
	w := msgNewWorld(t)
	first := w.open(t, "message 0")
	ids := []int64{first.MessageID}
	for i := 1; i < 5; i++ {
		ids = append(ids, w.add(t, first.TicketID, "Agent", fmt.Sprintf("message %d", i)).MessageID)
	}
	// Another ticket's messages are not listed.
	w.open(t, "elsewhere")

	q := fmt.Sprintf("?ticketId=%d", first.TicketID)
	all := msgList(t, w.tn.AgentToken, q)
	if all.TotalCount != 5 || all.TotalPages != 1 || len(all.Items) != 5 {
		t.Fatalf("list %d/%d, %d items", all.TotalCount, all.TotalPages, len(all.Items))
	}
	for i, m := range all.Items {
		if m.MessageID != ids[i] || m.Message != fmt.Sprintf("message %d", i) {
			t.Fatalf("item %d is %d %q; oldest first is %v", i, m.MessageID, m.Message, ids)
		}
	}
	for _, tc := range []struct {
		query string
		ids   []int64
		pages int
	}{
		{"&pageSize=2", ids[:2], 3},
		{"&pageSize=2&pageNumber=2", ids[2:4], 3},
		{"&pageSize=2&pageNumber=3", ids[4:], 3},
		{"&pageSize=2&pageNumber=4", nil, 3},
		{"&pageSize=5", ids, 1},
		{"&PAGESIZE=100&pagenumber=1", ids, 1},
	} {
		l := msgList(t, w.tn.AgentToken, q+tc.query)
		var got []int64
		for _, m := range l.Items {
			got = append(got, m.MessageID)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.ids) || l.TotalCount != 5 || l.TotalPages != tc.pages {
			t.Fatalf("%s: %v (%d, %d pages), want %v", tc.query, got, l.TotalCount, l.TotalPages, tc.ids)
		}
	}
	c := client(t)
	for _, tc := range []struct{ query, field string }{
		{"", "ticketId"},
		{"?pageSize=5", "ticketId"},
		{"?ticketId=abc", "ticketId"},
		{"?ticketId=0", "ticketId"},
		{"?ticketId=-1", "ticketId"},
		{q + "&ticketID=1", "ticketId"},
		{q + "&pageSize=0", "pageSize"},
		{q + "&pageSize=101", "pageSize"},
		{q + "&pageNumber=0", "pageNumber"},
	} {
		wantProblem(t, c.Do(http.MethodGet, msgPath+tc.query, w.tn.AgentToken, nil), http.StatusBadRequest, tc.field)
	}
	// Another customer's ticket, and one that does not exist, are 404s.
	other := newTenant(t)
	wantProblem(t, c.Do(http.MethodGet, msgPath+q, other.AgentToken, nil), http.StatusNotFound, "")
	wantProblem(t, c.Do(http.MethodGet, msgPath+"?ticketId=1125899906842624", w.tn.AgentToken, nil), http.StatusNotFound, "")
}

// Every id-taking route answers 404 for another customer's message, and
// changes nothing.
func TestMsgCrossTenant(t *testing.T) {
	t.Parallel()
	w := msgNewWorld(t)
	m := w.open(t, "mine")
	other := newTenant(t)
	c := client(t)
	id := msgID(m.MessageID)
	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{http.MethodGet, id, nil},
		{http.MethodPatch, id, map[string]any{"message": "taken over"}},
		{http.MethodDelete, id, nil},
		{http.MethodPut, id + "/topics", map[string]any{"topicIds": []int64{}}},
		{http.MethodPost, id + "/send-reply", map[string]any{"modifiedAnswer": "hi"}},
		{http.MethodPost, id + "/escalate", map[string]any{"feedbackComment": "x", "email": "a@example.com"}},
		{http.MethodPost, id + "/detect-topics", nil},
		{http.MethodGet, id + "/prompt-documents", nil},
	} {
		for _, token := range []string{other.AgentToken, other.AdminToken} {
			wantProblem(t, c.Do(tc.method, tc.path, token, tc.body), http.StatusNotFound, "")
		}
	}
	got := msgGet(t, w.tn.AgentToken, m.MessageID)
	if got.Message != "mine" || got.IsEscalated || got.AIReply.Status != "none" {
		t.Fatalf("changed by another customer: %+v", got)
	}
	if n := msgCount(t, "ticket_messages", w.tn.CustomerID); n != 1 {
		t.Fatalf("%d messages", n)
	}
}

func TestMsgIdempotency(t *testing.T) {
	t.Parallel()
	w := msgNewWorld(t)
	first := w.open(t, "start")
	key := "msg-" + randid.Hex(8)
	body := fmt.Sprintf(`{"ticketID":%d,"message":"only once"}`, first.TicketID)
	r1 := msgSend(t, http.MethodPost, msgPath, w.tn.AgentToken, "application/json", body, "Idempotency-Key", key)
	var m1 msgBody
	wantStatus(t, r1, http.StatusCreated, &m1)
	r2 := msgSend(t, http.MethodPost, msgPath, w.tn.AgentToken, "application/json", body, "Idempotency-Key", key)
	var m2 msgBody
	wantStatus(t, r2, http.StatusCreated, &m2)
	if r2.Header.Get("Idempotent-Replayed") != "true" || m2.MessageID != m1.MessageID || r2.Header.Get("Location") != r1.Header.Get("Location") {
		t.Fatalf("replay %s %+v", r2.Header, m2)
	}
	wantStatus(t, msgSend(t, http.MethodPost, msgPath, w.tn.AgentToken, "application/json",
		fmt.Sprintf(`{"ticketID":%d,"message":"another"}`, first.TicketID), "Idempotency-Key", key), http.StatusUnprocessableEntity, nil)
	// A ticket opened with a key is opened once.
	open := fmt.Sprintf(`{"message":"new","subject":"Once","channelID":%d,"endUserID":%d}`, w.channelID, w.endUserID)
	openKey := "msg-open-" + randid.Hex(8)
	counts := e2ekit.Parallel(8, func() *e2ekit.Response {
		return msgSend(t, http.MethodPost, msgPath, w.tn.AgentToken, "application/json", open, "Idempotency-Key", openKey)
	})
	if counts[http.StatusCreated] < 1 || counts[http.StatusCreated]+counts[http.StatusConflict] != 8 {
		t.Fatalf("statuses %v", counts)
	}
	if n, m := msgCount(t, "tickets", w.tn.CustomerID), msgCount(t, "ticket_messages", w.tn.CustomerID); n != 2 || m != 3 {
		t.Fatalf("%d tickets, %d messages", n, m)
	}
}

// An end user's message reopens a Resolved or Closed ticket; an agent's
// does not.
func TestMsgReopen(t *testing.T) {
	t.Parallel()
	w := msgNewWorld(t)
	m := w.open(t, "first")
	for _, tc := range []struct{ from, sender, want string }{
		{"Resolved", "EndUser", "Open"},
		{"Closed", "EndUser", "Open"},
		{"Pending", "EndUser", "Open"},
		{"Escalated", "EndUser", "Escalated"},
		{"Closed", "Agent", "Closed"},
		{"Resolved", "System", "Resolved"},
	} {
		msgSetTicketStatus(t, m.TicketID, tc.from)
		w.add(t, m.TicketID, tc.sender, "again")
		if got := msgTicketStatus(t, m.TicketID); got != tc.want {
			t.Errorf("%s message on a %s ticket: %s, want %s", tc.sender, tc.from, got, tc.want)
		}
	}
	// The reopening is a ticket.updated with the previous state.
	msgEvents(t, contracts.EventTicketUpdated, w.tn.CustomerID, 3, func(d contracts.TicketChanged) bool {
		return d.TicketID == m.TicketID && d.Status == "Open"
	})
}

func TestMsgPatch(t *testing.T) {
	t.Parallel()
	w := msgNewWorld(t)
	c := client(t)
	m := msgCreate(t, w.tn.AgentToken, map[string]any{"message": "original", "subject": "s", "channelID": w.channelID,
		"endUserID": w.endUserID, "customFieldsData": map[string]any{"a": 1, "b": 2}})
	id := msgID(m.MessageID)

	wantStatus(t, msgSend(t, http.MethodPatch, id, w.tn.AgentToken, "application/merge-patch+json",
		`{"message":"edited","aiReply":{"text":"A prepared answer"},"customFieldsData":{"b":null,"c":"x"}}`), http.StatusNoContent, nil)
	got := msgGet(t, w.tn.AgentToken, m.MessageID)
	if got.Message != "edited" || got.AIReply.Text == nil || *got.AIReply.Text != "A prepared answer" || got.AIReply.Status != "prepared" ||
		got.AIReply.DateCreated == nil || fmt.Sprint(got.CustomFieldsData) != "map[a:1 c:x]" {
		t.Fatalf("patched %+v", got)
	}
	// application/json is a merge patch too; null empties customFieldsData.
	wantStatus(t, c.Do(http.MethodPatch, id, w.tn.AgentToken, map[string]any{"customFieldsData": nil, "aiReply": map[string]any{"text": nil}}),
		http.StatusNoContent, nil)
	got = msgGet(t, w.tn.AgentToken, m.MessageID)
	if len(got.CustomFieldsData) != 0 || got.AIReply.Status != "none" || got.AIReply.Text != nil || got.AIReply.DateCreated != nil || got.Message != "edited" {
		t.Fatalf("cleared %+v", got)
	}
	for _, tc := range []struct {
		name, body string
		fields     []string
	}{
		{"ticketID", `{"ticketID":5}`, []string{"ticketID"}},
		{"senderType and isEscalated", `{"senderType":"Agent","isEscalated":true}`, []string{"senderType", "isEscalated"}},
		{"reply status", `{"aiReply":{"status":"sent"}}`, []string{"aiReply.status"}},
		{"null message", `{"message":null}`, []string{"message"}},
		{"blank message", `{"message":" "}`, []string{"message"}},
		{"blank reply", `{"aiReply":{"text":""}}`, []string{"aiReply.text"}},
		{"custom fields array", `{"customFieldsData":[]}`, []string{"customFieldsData"}},
		{"not an object", `"edited"`, nil},
		{"malformed", `{"message":`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := msgSend(t, http.MethodPatch, id, w.tn.AgentToken, "application/merge-patch+json", tc.body)
			wantStatus(t, r, http.StatusBadRequest, nil)
			for _, f := range tc.fields {
				if r.Problem(t).Errors[f] == "" {
					t.Fatalf("no errors.%s: %s", f, r.String())
				}
			}
		})
	}
	wantStatus(t, msgSend(t, http.MethodPatch, id, w.tn.AgentToken, "text/plain", `{"message":"x"}`), http.StatusUnsupportedMediaType, nil)
	wantStatus(t, c.Do(http.MethodPatch, msgID(1<<50), w.tn.AgentToken, map[string]any{"message": "x"}), http.StatusNotFound, nil)
	// After the reply was sent it cannot change.
	wantStatus(t, c.Do(http.MethodPatch, id, w.tn.AgentToken, map[string]any{"aiReply": map[string]any{"text": "again"}}), http.StatusNoContent, nil)
	wantStatus(t, c.Do(http.MethodPost, id+"/send-reply", w.tn.AgentToken, nil), http.StatusOK, nil)
	wantProblem(t, c.Do(http.MethodPatch, id, w.tn.AgentToken, map[string]any{"aiReply": map[string]any{"text": "changed"}}),
		http.StatusConflict, "aiReply.text")
	if got = msgGet(t, w.tn.AgentToken, m.MessageID); got.Message != "edited" {
		t.Fatalf("after refusals %+v", got)
	}
	// Three patches changed something.
	msgEvents(t, contracts.EventMessageUpdated, w.tn.CustomerID, 3, func(d contracts.MessageChanged) bool { return d.MessageID == m.MessageID })
}

func TestMsgDelete(t *testing.T) {
	t.Parallel()
	w := msgNewWorld(t)
	c := client(t)
	m := w.open(t, "to delete")
	keep := w.add(t, m.TicketID, "Agent", "stays")
	wantStatus(t, c.Do(http.MethodDelete, msgID(m.MessageID), w.tn.AgentToken, nil), http.StatusNoContent, nil)
	wantProblem(t, c.Do(http.MethodGet, msgID(m.MessageID), w.tn.AgentToken, nil), http.StatusNotFound, "")
	wantProblem(t, c.Do(http.MethodDelete, msgID(m.MessageID), w.tn.AgentToken, nil), http.StatusNotFound, "")
	wantProblem(t, c.Do(http.MethodDelete, msgPath+"/0", w.tn.AgentToken, nil), http.StatusBadRequest, "id")
	if l := msgList(t, w.tn.AgentToken, fmt.Sprintf("?ticketId=%d", m.TicketID)); l.TotalCount != 1 || l.Items[0].MessageID != keep.MessageID {
		t.Fatalf("left %+v", l)
	}
	msgEvents(t, contracts.EventMessageDeleted, w.tn.CustomerID, 1, func(d contracts.MessageChanged) bool { return d.MessageID == m.MessageID })
}
