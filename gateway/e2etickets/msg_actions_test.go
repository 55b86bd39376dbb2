package e2etickets

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
)

type msgConfirmation struct {
	Message string `json:"message"`
}

// msgPrepare stores a prepared AI reply on a message.
func msgPrepare(t *testing.T, token string, id int64, text string) {
	t.Helper()
	wantStatus(t, msgSend(t, http.MethodPatch, msgID(id), token, "application/merge-patch+json",
		fmt.Sprintf(`{"aiReply":{"text":%q}}`, text)), http.StatusNoContent, nil)
}

func TestMsgSendReply(t *testing.T) {
	t.Parallel()
	w := msgNewWorld(t)
	c := client(t)
	m := w.open(t, "How do I reset my password?")
	path := msgID(m.MessageID) + "/send-reply"

	// Nothing prepared and no answer of one's own.
	wantProblem(t, c.Do(http.MethodPost, path, w.tn.AgentToken, nil), http.StatusConflict, "modifiedAnswer")
	wantProblem(t, c.Do(http.MethodPost, path, w.tn.AgentToken, map[string]any{"modifiedAnswer": "   "}), http.StatusConflict, "modifiedAnswer")
	wantProblem(t, c.Do(http.MethodPost, path, w.tn.AgentToken, map[string]any{"modifiedAnswer": 5}), http.StatusBadRequest, "modifiedAnswer")
	wantProblem(t, c.Do(http.MethodPost, path, w.tn.AgentToken, map[string]any{"modifiedAnswer": "a\u0000b"}), http.StatusBadRequest, "")

	msgPrepare(t, w.tn.AgentToken, m.MessageID, "Use the link on the login page.")
	if got := msgGet(t, w.tn.AgentToken, m.MessageID); got.AIReply.Status != "prepared" {
		t.Fatalf("prepared %+v", got.AIReply)
	}
	var ok msgConfirmation
	wantStatus(t, c.Do(http.MethodPost, path, w.tn.AgentToken, nil), http.StatusOK, &ok)
	if ok.Message == "" {
		t.Fatal("no confirmation")
	}
	got := msgGet(t, w.tn.AgentToken, m.MessageID)
	if got.AIReply.Status != "sent" || got.AIReply.Text == nil || *got.AIReply.Text != "Use the link on the login page." {
		t.Fatalf("sent %+v", got.AIReply)
	}
	l := msgList(t, w.tn.AgentToken, fmt.Sprintf("?ticketId=%d", m.TicketID))
	if l.TotalCount != 2 {
		t.Fatalf("%d messages", l.TotalCount)
	}
	reply := l.Items[1]
	if reply.SenderType != "Agent" || reply.SenderAccountID == nil || reply.Message != "Use the link on the login page." {
		t.Fatalf("reply %+v", reply)
	}
	// A retry does not send twice, with or without an answer of one's own.
	wantProblem(t, c.Do(http.MethodPost, path, w.tn.AgentToken, nil), http.StatusConflict, "aiReply")
	wantProblem(t, c.Do(http.MethodPost, path, w.tn.AgentToken, map[string]any{"modifiedAnswer": "other"}), http.StatusConflict, "aiReply")

	// The agent's own answer instead of the prepared one.
	m2 := w.add(t, m.TicketID, "EndUser", "It does not work")
	msgPrepare(t, w.tn.AgentToken, m2.MessageID, "Try again.")
	wantStatus(t, c.Do(http.MethodPost, msgID(m2.MessageID)+"/send-reply", w.tn.AdminToken,
		map[string]any{"modifiedAnswer": "  I reset it for you.  "}), http.StatusOK, nil)
	if got := msgGet(t, w.tn.AgentToken, m2.MessageID); got.AIReply.Status != "modified" || *got.AIReply.Text != "I reset it for you." {
		t.Fatalf("modified %+v", got.AIReply)
	}
	wantProblem(t, c.Do(http.MethodPost, msgID(m2.MessageID)+"/send-reply", w.tn.AgentToken, nil), http.StatusConflict, "")
	wantProblem(t, c.Do(http.MethodPost, msgID(1<<50)+"/send-reply", w.tn.AgentToken, nil), http.StatusNotFound, "")

	sent := msgEvents(t, contracts.EventReplySent, w.tn.CustomerID, 2, func(d contracts.ReplySent) bool { return d.TicketID == m.TicketID })
	if sent[0].InReplyToID != m.MessageID || sent[0].MessageID != reply.MessageID || sent[0].Modified ||
		sent[0].ChannelID != w.channelID || sent[0].EndUserID != w.endUserID || sent[1].InReplyToID != m2.MessageID || !sent[1].Modified ||
		sent[1].Text != "I reset it for you." {
		t.Fatalf("reply.sent %+v", sent)
	}
}

// Ten sends of one prepared reply at once: one 200, nine 409, one new
// message.
func TestMsgSendReplyConcurrent(t *testing.T) {
	t.Parallel()
	w := msgNewWorld(t)
	m := w.open(t, "once")
	msgPrepare(t, w.tn.AgentToken, m.MessageID, "Only once")
	counts := e2ekit.Parallel(10, func() *e2ekit.Response {
		return client(t).Do(http.MethodPost, msgID(m.MessageID)+"/send-reply", w.tn.AgentToken, nil)
	})
	if counts[http.StatusOK] != 1 || counts[http.StatusConflict] != 9 {
		t.Fatalf("statuses %v", counts)
	}
	if n := msgCount(t, "ticket_messages", w.tn.CustomerID); n != 2 {
		t.Fatalf("%d messages", n)
	}
}

func TestMsgEscalate(t *testing.T) {
	t.Parallel()
	w := msgNewWorld(t)
	c := client(t)
	m := w.open(t, "The bot keeps sending me the wrong answer")
	path := msgID(m.MessageID) + "/escalate"
	for _, tc := range []struct {
		name   string
		body   any
		fields []string
	}{
		{"empty", `{}`, []string{"feedbackComment", "email"}},
		{"bad email", map[string]any{"feedbackComment": "wrong", "email": "not an address"}, []string{"email"}},
		{"display name", map[string]any{"feedbackComment": "wrong", "email": "Lead <lead@example.com>"}, []string{"email"}},
		{"two addresses", map[string]any{"feedbackComment": "wrong", "email": "a@example.com,b@example.com"}, []string{"email"}},
		{"blank comment", map[string]any{"feedbackComment": "  ", "email": "lead@example.com"}, []string{"feedbackComment"}},
		{"long comment", map[string]any{"feedbackComment": strings.Repeat("x", 2001), "email": "lead@example.com"}, []string{"feedbackComment"}},
		{"comment a number", map[string]any{"feedbackComment": 3, "email": "lead@example.com"}, []string{"feedbackComment"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.Do(http.MethodPost, path, w.tn.AgentToken, tc.body)
			wantStatus(t, r, http.StatusBadRequest, nil)
			for _, f := range tc.fields {
				if r.Problem(t).Errors[f] == "" {
					t.Fatalf("no errors.%s: %s", f, r.String())
				}
			}
		})
	}
	if msgTicketStatus(t, m.TicketID) != "Open" || msgGet(t, w.tn.AgentToken, m.MessageID).IsEscalated {
		t.Fatal("escalated by a refused request")
	}
	var ok msgConfirmation
	wantStatus(t, c.Do(http.MethodPost, path, w.tn.AgentToken,
		map[string]any{"feedbackComment": " The answer was wrong ", "email": "Lead@Example.com"}), http.StatusOK, &ok)
	if ok.Message == "" || !msgGet(t, w.tn.AgentToken, m.MessageID).IsEscalated || msgTicketStatus(t, m.TicketID) != "Escalated" {
		t.Fatalf("escalation %+v, ticket %s", ok, msgTicketStatus(t, m.TicketID))
	}
	var comment, email string
	if err := backends.DB.QueryRow(t.Context(), `SELECT comment, email FROM tickets.feedback_comments WHERE message_id = $1`,
		m.MessageID).Scan(&comment, &email); err != nil || comment != "The answer was wrong" || email != "lead@example.com" {
		t.Fatalf("feedback comment %q %q %v", comment, email, err)
	}
	msgEvents(t, contracts.EventMessageEscalated, w.tn.CustomerID, 1, func(d contracts.MessageEscalated) bool {
		return d.MessageID == m.MessageID && d.TicketID == m.TicketID && d.Email == "lead@example.com"
	})

	// A message of a Closed ticket cannot be escalated.
	closed := w.open(t, "closed")
	msgSetTicketStatus(t, closed.TicketID, "Closed")
	wantProblem(t, c.Do(http.MethodPost, msgID(closed.MessageID)+"/escalate", w.tn.AgentToken,
		map[string]any{"feedbackComment": "late", "email": "lead@example.com"}), http.StatusConflict, "status")
	if msgTicketStatus(t, closed.TicketID) != "Closed" || msgGet(t, w.tn.AgentToken, closed.MessageID).IsEscalated {
		t.Fatal("a closed ticket was escalated")
	}
	wantProblem(t, c.Do(http.MethodPost, msgID(1<<50)+"/escalate", w.tn.AgentToken,
		map[string]any{"feedbackComment": "x", "email": "lead@example.com"}), http.StatusNotFound, "")
}

func TestMsgDetectTopics(t *testing.T) {
	t.Parallel()
	w := msgNewWorld(t)
	c := client(t)
	m := w.open(t, "detect my topics")
	wantStatus(t, c.Do(http.MethodPost, msgID(m.MessageID)+"/detect-topics", w.tn.AgentToken, nil), http.StatusNoContent, nil)
	wantProblem(t, c.Do(http.MethodPost, msgID(1<<50)+"/detect-topics", w.tn.AgentToken, nil), http.StatusNotFound, "")
	wantProblem(t, c.Do(http.MethodPost, msgPath+"/x/detect-topics", w.tn.AgentToken, nil), http.StatusBadRequest, "id")
	msgEvents(t, contracts.EventTopicDetectionRequested, w.tn.CustomerID, 1, func(d contracts.TopicDetectionRequested) bool {
		return d.MessageID == m.MessageID && d.TicketID == m.TicketID
	})
}

func TestMsgPromptDocuments(t *testing.T) {
	t.Parallel()
	w := msgNewWorld(t)
	c := client(t)
	sfx := randid.Hex(3)
	m := w.open(t, "I need help with my invoice")
	path := msgID(m.MessageID) + "/prompt-documents"
	var docs struct {
		PromptDocuments []struct {
			DocumentID int64  `json:"documentID"`
			Title      string `json:"title"`
			Content    string `json:"content"`
		} `json:"promptDocuments"`
		Source string `json:"source"`
	}
	wantStatus(t, c.Do(http.MethodGet, path, w.tn.AgentToken, nil), http.StatusOK, &docs)
	if docs.PromptDocuments == nil || len(docs.PromptDocuments) != 0 {
		t.Fatalf("without topics %+v", docs)
	}

	billing := createTopic(t, w.tn, "Billing "+sfx)
	refunds := createTopic(t, w.tn, "Refunds "+sfx)
	doc := func(title string) int64 {
		var d struct {
			DocumentID int64 `json:"documentID"`
		}
		wantStatus(t, c.Do(http.MethodPost, "/api/Documents", w.tn.AdminToken, map[string]any{"title": title, "content": "About " + title}),
			http.StatusCreated, &d)
		return d.DocumentID
	}
	link := func(topicID, documentID int64, score int) {
		wantStatus(t, c.Do(http.MethodPost, "/api/TopicDocuments", w.tn.AdminToken,
			map[string]any{"topicID": topicID, "documentID": documentID, "relevanceScore": score}), http.StatusCreated, nil)
	}
	var ids []int64
	for i := range 7 {
		ids = append(ids, doc(fmt.Sprintf("Doc %d %s", i, sfx)))
	}
	// Doc 0 is linked to both topics (it comes once, with its best score).
	link(billing, ids[0], 10)
	link(refunds, ids[0], 95)
	for i, score := range []int{50, 80, 20, 70, 60, 30} {
		link(billing, ids[i+1], score)
	}
	wantStatus(t, msgPutTopics(t, w.tn.AgentToken, m.MessageID, billing, refunds), http.StatusNoContent, nil)
	wantStatus(t, c.Do(http.MethodGet, path, w.tn.AgentToken, nil), http.StatusOK, &docs)
	var got []int64
	for _, d := range docs.PromptDocuments {
		got = append(got, d.DocumentID)
		if d.Title == "" || d.Content != "About "+d.Title {
			t.Fatalf("document %+v", d)
		}
	}
	// No reply prepared (no assistant in this stack): the current ranking,
	// the best three. The documents say the same about the message ("About
	// Doc n"), so their relevance decides: 95 (doc 0), 80, 70.
	if want := []int64{ids[0], ids[2], ids[4]}; fmt.Sprint(got) != fmt.Sprint(want) || docs.Source != "ranking" {
		t.Fatalf("documents %v (%s), want %v (ranking)", got, docs.Source, want)
	}
	wantProblem(t, c.Do(http.MethodGet, msgID(1<<50)+"/prompt-documents", w.tn.AgentToken, nil), http.StatusNotFound, "")
}
