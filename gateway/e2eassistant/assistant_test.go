package e2eassistant

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
)

type tenant = e2ekit.Tenant

func newTenant(t *testing.T) tenant {
	t.Helper()
	return e2ekit.NewTenant(t, stk, client(t), "Assistant")
}

func client(t testing.TB) *e2ekit.Client {
	return e2ekit.NewClient(t, stk.HTTPSURL, stk.HTTPClient(), api)
}

func wantStatus(t testing.TB, r *e2ekit.Response, want int, v any) {
	t.Helper()
	e2ekit.WantStatus(t, r, want, v)
}

type topicRef struct {
	TopicID   int64  `json:"topicID"`
	TopicName string `json:"topicName"`
}

type messageBody struct {
	MessageID  int64      `json:"messageID"`
	TicketID   int64      `json:"ticketID"`
	SenderType string     `json:"senderType"`
	Message    string     `json:"message"`
	Topics     []topicRef `json:"topics"`
	AIReply    struct {
		Text   *string `json:"text"`
		Status string  `json:"status"`
		Engine *string `json:"engine"`
		Model  *string `json:"model"`
	} `json:"aiReply"`
}

type promptDocs struct {
	Source          string  `json:"source"`
	Engine          *string `json:"engine"`
	PromptDocuments []struct {
		DocumentID int64   `json:"documentID"`
		Title      string  `json:"title"`
		Content    string  `json:"content"`
		Score      float64 `json:"score"`
	} `json:"promptDocuments"`
}

// world is a tenant with a knowledge base, a web channel and an end user.
type world struct {
	tn        tenant
	channelID int64
	endUserID int64
	topics    map[string]int64 // by key
	docs      map[string]int64 // by key
}

// knowledge is a small help centre: topic key -> name, description, and a
// linked document.
var knowledge = []struct{ key, name, description, title, content string }{
	{"invoices", "Invoices", "Invoices, receipts, billing documents and VAT numbers",
		"Downloading an invoice", "Every invoice is available in your account under Billing > Invoices. Click the invoice number to download it as a PDF. Invoices are issued on the first day of each month."},
	{"delivery", "Delivery", "Shipping, parcels, couriers, delivery times and tracking",
		"Tracking a parcel", "Parcels leave our warehouse within one working day. You receive a tracking link by e-mail as soon as the parcel is shipped; delivery takes two to four working days."},
	{"password", "Password", "Logging in, forgotten passwords and two-factor authentication",
		"Resetting your password", "To reset your password, open the login page and click Forgot password. We send a reset link by e-mail; it is valid for thirty minutes."},
}

func newWorld(t *testing.T, marker string) world {
	t.Helper()
	tn := newTenant(t)
	c := client(t)
	w := world{tn: tn, topics: map[string]int64{}, docs: map[string]int64{}}
	for _, k := range knowledge {
		var tp struct {
			TopicID int64 `json:"topicID"`
		}
		wantStatus(t, c.Do(http.MethodPost, "/api/Topics", tn.AdminToken, map[string]any{"name": k.name, "description": k.description}), http.StatusCreated, &tp)
		var doc struct {
			DocumentID int64 `json:"documentID"`
		}
		wantStatus(t, c.Do(http.MethodPost, "/api/Documents", tn.AdminToken, map[string]any{"title": k.title + marker,
			"content": k.content, "channelID": nil, "hookName": "", "isHook": false}), http.StatusCreated, &doc)
		wantStatus(t, c.Do(http.MethodPost, "/api/TopicDocuments", tn.AdminToken, map[string]any{"topicID": tp.TopicID,
			"documentID": doc.DocumentID, "relevanceScore": 10}), http.StatusCreated, nil)
		w.topics[k.key], w.docs[k.key] = tp.TopicID, doc.DocumentID
	}
	var ch struct {
		ChannelID int64 `json:"channelID"`
	}
	wantStatus(t, c.Do(http.MethodPost, "/api/Channels", tn.AdminToken, map[string]any{"name": "Web " + randid.Hex(3), "kind": "web"}), http.StatusCreated, &ch)
	var u struct {
		EndUserID int64 `json:"endUserID"`
	}
	wantStatus(t, c.Do(http.MethodPost, "/api/EndUsers", tn.AgentToken, map[string]any{"name": "Ada Lovelace",
		"email": "ada-" + randid.Hex(4) + "@example.org"}), http.StatusCreated, &u)
	w.channelID, w.endUserID = ch.ChannelID, u.EndUserID
	return w
}

// open opens a ticket with an end user's message (or another sender's).
func (w world) open(t *testing.T, sender, text string) messageBody {
	t.Helper()
	var m messageBody
	wantStatus(t, client(t).Do(http.MethodPost, "/api/TicketMessages", w.tn.AgentToken, map[string]any{"message": text,
		"senderType": sender, "subject": "Question " + randid.Hex(3), "channelID": w.channelID, "endUserID": w.endUserID}), http.StatusCreated, &m)
	return m
}

func (w world) message(t testing.TB, id int64) messageBody {
	t.Helper()
	var m messageBody
	wantStatus(t, client(t).Do(http.MethodGet, fmt.Sprintf("/api/TicketMessages/%d", id), w.tn.AgentToken, nil), http.StatusOK, &m)
	return m
}

// waitReply waits until the assistant has dealt with the message (a
// prepared reply, or its engine recorded on a reply it could not ground).
func (w world) waitReply(t *testing.T, id int64) messageBody {
	t.Helper()
	var m messageBody
	e2ekit.Eventually(t, 20*time.Second, fmt.Sprintf("the assistant's reply to message %d", id), func() bool {
		m = w.message(t, id)
		return m.AIReply.Status == "prepared" || m.AIReply.Engine != nil
	})
	return m
}

func (w world) promptDocs(t testing.TB, id int64) promptDocs {
	t.Helper()
	var p promptDocs
	wantStatus(t, client(t).Do(http.MethodGet, fmt.Sprintf("/api/TicketMessages/%d/prompt-documents", id), w.tn.AgentToken, nil), http.StatusOK, &p)
	return p
}

func topicIDs(m messageBody) []int64 {
	var out []int64
	for _, tp := range m.Topics {
		out = append(out, tp.TopicID)
	}
	return out
}

// events is e2ekit.Events on the suite's backends.
func events[T any](t *testing.T, typ string, customerID int64, match func(T) bool) []T {
	t.Helper()
	return e2ekit.Events(t, backends, typ, customerID, match)
}

// An end user's question gets its topic, its prompt documents and a reply
// grounded in them, addressed by name, from the offline engine (the LLM is
// down); sent as prepared, it becomes the agent's message.
func TestReplyPreparedAndSentAsIs(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	m := w.open(t, "EndUser", "Hello, where can I download the invoice for last month? I need the PDF for my accountant.")
	got := w.waitReply(t, m.MessageID)
	if got.AIReply.Status != "prepared" || got.AIReply.Text == nil || got.AIReply.Engine == nil || *got.AIReply.Engine != "offline" {
		t.Fatalf("aiReply %+v", got.AIReply)
	}
	reply := *got.AIReply.Text
	if !strings.Contains(reply, "Ada") || !strings.Contains(reply, "Billing > Invoices") {
		t.Fatalf("reply not grounded or not addressed: %q", reply)
	}
	if !slices.Contains(topicIDs(got), w.topics["invoices"]) || slices.Contains(topicIDs(got), w.topics["password"]) {
		t.Fatalf("topics %+v", got.Topics)
	}
	// The event goes through the outbox: it may follow the API's answer.
	var assigned []contracts.TopicsAssigned
	e2ekit.Eventually(t, 10*time.Second, "topics-assigned", func() bool {
		assigned = events(t, contracts.EventTopicsAssigned, w.tn.CustomerID, func(d contracts.TopicsAssigned) bool { return d.MessageID == m.MessageID })
		return len(assigned) > 0
	})
	if len(assigned) != 1 || assigned[0].Source != "auto" {
		t.Fatalf("topics-assigned %+v", assigned)
	}
	p := w.promptDocs(t, m.MessageID)
	if p.Source != "reply" || len(p.PromptDocuments) == 0 || p.PromptDocuments[0].DocumentID != w.docs["invoices"] {
		t.Fatalf("prompt documents %+v", p)
	}
	var sent struct {
		Message string `json:"message"`
	}
	wantStatus(t, client(t).Do(http.MethodPost, fmt.Sprintf("/api/TicketMessages/%d/send-reply", m.MessageID), w.tn.AgentToken, map[string]any{}), http.StatusOK, &sent)
	after := w.message(t, m.MessageID)
	if after.AIReply.Status != "sent" {
		t.Fatalf("after send-reply: %+v", after.AIReply)
	}
	var l e2ekit.List[messageBody]
	wantStatus(t, client(t).Do(http.MethodGet, fmt.Sprintf("/api/TicketMessages?ticketId=%d", m.TicketID), w.tn.AgentToken, nil), http.StatusOK, &l)
	if len(l.Items) != 2 || l.Items[1].SenderType != "Agent" || l.Items[1].Message != reply {
		t.Fatalf("messages %+v", l.Items)
	}
}

// A Spanish question gets a Spanish reply; a modified answer is sent as the
// agent wrote it.
func TestReplyInTheEndUsersLanguageAndModified(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	m := w.open(t, "EndUser", "Hola, olvidé mi contraseña y no puedo entrar. ¿Cómo puedo restablecer la contraseña?")
	got := w.waitReply(t, m.MessageID)
	if got.AIReply.Status != "prepared" || !strings.HasPrefix(*got.AIReply.Text, "Hola Ada") {
		t.Fatalf("aiReply %+v %q", got.AIReply, deref(got.AIReply.Text))
	}
	own := "Te he enviado un enlace nuevo. " + randid.Hex(3)
	wantStatus(t, client(t).Do(http.MethodPost, fmt.Sprintf("/api/TicketMessages/%d/send-reply", m.MessageID), w.tn.AgentToken,
		map[string]any{"modifiedAnswer": own}), http.StatusOK, nil)
	if after := w.message(t, m.MessageID); after.AIReply.Status != "modified" {
		t.Fatalf("after a modified send: %+v", after.AIReply)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// detect-topics on an agent's message (not detected automatically) assigns
// the topic and triggers its actions in priority order, except the one that
// requires confirmation, which fires when an agent puts the detected topics;
// topics assigned by hand are never replaced by a later detection.
func TestDetectTopicsTriggersActionsAndManualWins(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	c := client(t)
	var mapped []int64
	for i, prio := range []int{20, 5} {
		var a struct {
			ActionID int64 `json:"actionID"`
		}
		wantStatus(t, c.Do(http.MethodPost, "/api/Actions", w.tn.AdminToken, map[string]any{"name": fmt.Sprintf("Notify %d %s", i, randid.Hex(3)),
			"hookName": fmt.Sprintf("hook-%d", i), "isActive": true}), http.StatusCreated, &a)
		var ta struct {
			TopicActionID int64 `json:"topicActionID"`
		}
		wantStatus(t, c.Do(http.MethodPost, "/api/TopicActions", w.tn.AdminToken, map[string]any{"topicID": w.topics["delivery"],
			"actionID": a.ActionID, "priority": prio, "isActive": true}), http.StatusCreated, &ta)
		mapped = append(mapped, ta.TopicActionID)
	}
	var held struct {
		ActionID             int64 `json:"actionID"`
		RequiresConfirmation bool  `json:"requiresConfirmation"`
	}
	wantStatus(t, c.Do(http.MethodPost, "/api/Actions", w.tn.AdminToken, map[string]any{"name": "Refund " + randid.Hex(3),
		"hookName": "refund", "requiresConfirmation": true}), http.StatusCreated, &held)
	if !held.RequiresConfirmation {
		t.Fatalf("action %+v, want requiresConfirmation", held)
	}
	var heldMapping struct {
		TopicActionID int64 `json:"topicActionID"`
	}
	wantStatus(t, c.Do(http.MethodPost, "/api/TopicActions", w.tn.AdminToken, map[string]any{"topicID": w.topics["delivery"],
		"actionID": held.ActionID, "priority": 1, "isActive": true}), http.StatusCreated, &heldMapping)
	m := w.open(t, "Agent", "The customer says the parcel has not arrived and wants the tracking link of the courier.")
	wantStatus(t, c.Do(http.MethodPost, fmt.Sprintf("/api/TicketMessages/%d/detect-topics", m.MessageID), w.tn.AgentToken, nil), http.StatusNoContent, nil)
	e2ekit.Eventually(t, 20*time.Second, "detected topics", func() bool { return len(w.message(t, m.MessageID).Topics) > 0 })
	if got := topicIDs(w.message(t, m.MessageID)); !slices.Contains(got, w.topics["delivery"]) {
		t.Fatalf("topics %v, want delivery %d", got, w.topics["delivery"])
	}
	var triggered []contracts.TopicActionTriggered
	e2ekit.Eventually(t, 10*time.Second, "two actions triggered", func() bool {
		triggered = events(t, contracts.EventTopicActionTriggered, w.tn.CustomerID, func(d contracts.TopicActionTriggered) bool { return d.MessageID == m.MessageID })
		return len(triggered) >= 2
	})
	if len(triggered) != 2 || triggered[0].TopicActionID != mapped[1] || triggered[1].TopicActionID != mapped[0] {
		t.Fatalf("triggered %+v, want priority 5 (%d) then 20 (%d), not the held %d", triggered, mapped[1], mapped[0], heldMapping.TopicActionID)
	}
	// The agent confirms the detected topics: the held action fires, once.
	wantStatus(t, c.Do(http.MethodPut, fmt.Sprintf("/api/TicketMessages/%d/topics", m.MessageID), w.tn.AgentToken,
		map[string]any{"topicIds": topicIDs(w.message(t, m.MessageID))}), http.StatusNoContent, nil)
	e2ekit.Eventually(t, 10*time.Second, "the confirmed action", func() bool {
		triggered = events(t, contracts.EventTopicActionTriggered, w.tn.CustomerID, func(d contracts.TopicActionTriggered) bool { return d.MessageID == m.MessageID })
		return len(triggered) >= 3
	})
	if len(triggered) != 3 || triggered[2].TopicActionID != heldMapping.TopicActionID || !triggered[2].Confirmed {
		t.Fatalf("triggered %+v, want the held %d confirmed last", triggered, heldMapping.TopicActionID)
	}

	// By hand first: detection later keeps the agent's choice (the
	// assistant counts the request it did not act on).
	m2 := w.open(t, "Agent", "Where is my invoice PDF for March?")
	wantStatus(t, c.Do(http.MethodPut, fmt.Sprintf("/api/TicketMessages/%d/topics", m2.MessageID), w.tn.AgentToken,
		map[string]any{"topicIds": []int64{w.topics["password"]}}), http.StatusNoContent, nil)
	kept := func() float64 { return metric(t, "assistant_work_total", `kind="detect"`, `outcome="manual-kept"`) }
	before := kept()
	wantStatus(t, c.Do(http.MethodPost, fmt.Sprintf("/api/TicketMessages/%d/detect-topics", m2.MessageID), w.tn.AgentToken, nil), http.StatusNoContent, nil)
	e2ekit.Eventually(t, 20*time.Second, "the detection that kept the manual topics", func() bool { return kept() > before })
	if got := topicIDs(w.message(t, m2.MessageID)); fmt.Sprint(got) != fmt.Sprint([]int64{w.topics["password"]}) {
		t.Fatalf("manual topics replaced: %v", got)
	}
}

// metric sums a counter of the assistant's /metrics over the label sets
// that contain every label given.
func metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	resp, err := http.Get(stk.ServiceURLs["assistant"] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(string(data), "\n") {
		rest, ok := strings.CutPrefix(line, name+"{")
		if !ok {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(rest, l)
		}
		if i := strings.LastIndexByte(rest, ' '); match && i >= 0 {
			v, err := strconv.ParseFloat(rest[i+1:], 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			sum += v
		}
	}
	return sum
}

// Two tenants with the same help centre: each message uses its own
// tenant's topics and documents only.
func TestTenantsNeverShareTopicsOrDocuments(t *testing.T) {
	t.Parallel()
	a := newWorld(t, " (A)")
	b := newWorld(t, " (B)")
	ma := a.open(t, "EndUser", "My parcel has not arrived, how can I track the delivery?")
	mb := b.open(t, "EndUser", "My parcel has not arrived, how can I track the delivery?")
	for _, x := range []struct {
		w     world
		m     messageBody
		other world
	}{{a, ma, b}, {b, mb, a}} {
		got := x.w.waitReply(t, x.m.MessageID)
		for _, id := range topicIDs(got) {
			if !slices.Contains([]int64{x.w.topics["invoices"], x.w.topics["delivery"], x.w.topics["password"]}, id) {
				t.Fatalf("topic %d is not the tenant's", id)
			}
		}
		p := x.w.promptDocs(t, x.m.MessageID)
		if len(p.PromptDocuments) == 0 {
			t.Fatalf("no prompt documents: %+v (reply %+v)", p, got.AIReply)
		}
		for _, d := range p.PromptDocuments {
			if d.DocumentID == x.other.docs["delivery"] || d.DocumentID == x.other.docs["invoices"] || d.DocumentID == x.other.docs["password"] {
				t.Fatalf("another tenant's document %+v", d)
			}
		}
		// And the other tenant cannot see the message at all.
		wantStatus(t, client(t).Do(http.MethodGet, fmt.Sprintf("/api/TicketMessages/%d/prompt-documents", x.m.MessageID), x.other.tn.AgentToken, nil), http.StatusNotFound, nil)
	}
}

// The summary tells the conversation and follows a new message.
func TestSummaryFollowsTheConversation(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	m := w.open(t, "EndUser", "My parcel has not arrived after two weeks. The tracking link shows nothing.")
	summary := func() string {
		var s string
		wantStatus(t, client(t).Do(http.MethodGet, fmt.Sprintf("/api/Tickets/%d/summary", m.TicketID), w.tn.AgentToken, nil), http.StatusOK, &s)
		return s
	}
	first := summary()
	if !strings.Contains(first, "parcel") {
		t.Fatalf("summary %q", first)
	}
	wantStatus(t, client(t).Do(http.MethodPost, "/api/TicketMessages", w.tn.AgentToken, map[string]any{"ticketID": m.TicketID,
		"senderType": "Agent", "message": "We opened an investigation with the courier about the missing parcel."}), http.StatusCreated, nil)
	if second := summary(); second == first || !strings.Contains(second, "courier") {
		t.Fatalf("summary after a new message %q (before %q)", second, first)
	}
}

// The feedback report counts the engine's prepared replies; admins only.
func TestFeedbackReport(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	m := w.open(t, "EndUser", "Where can I download my invoice as a PDF?")
	w.waitReply(t, m.MessageID)
	var rep struct {
		Engines []struct {
			Engine   string `json:"engine"`
			Model    string `json:"model"`
			Prepared int    `json:"prepared"`
		} `json:"engines"`
	}
	wantStatus(t, client(t).Do(http.MethodGet, "/api/Assistant/feedback", w.tn.AdminToken, nil), http.StatusOK, &rep)
	if len(rep.Engines) != 1 || rep.Engines[0].Engine != "offline" || rep.Engines[0].Prepared != 1 {
		t.Fatalf("report %+v", rep)
	}
	wantStatus(t, client(t).Do(http.MethodGet, "/api/Assistant/feedback", w.tn.AgentToken, nil), http.StatusForbidden, nil)
	// A bad window is a 400 naming the parameter.
	r := client(t).Do(http.MethodGet, "/api/Assistant/feedback?from=yesterday", w.tn.AdminToken, nil)
	wantStatus(t, r, http.StatusBadRequest, nil)
	if !strings.Contains(r.String(), "from") {
		t.Fatalf("problem does not name from: %s", r.String())
	}
	// Another tenant's report holds none of this tenant's replies.
	other := newTenant(t)
	var empty struct {
		Engines []struct{ Prepared int } `json:"engines"`
	}
	wantStatus(t, client(t).Do(http.MethodGet, "/api/Assistant/feedback", other.AdminToken, nil), http.StatusOK, &empty)
	if len(empty.Engines) != 0 {
		t.Fatalf("another tenant's report %+v", empty)
	}
}
