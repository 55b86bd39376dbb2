package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/pkg/apicontract"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/services/tickets/internal/assistant"
	"supportplatform.dev/services/tickets/internal/tickets"
)

// A message made from mail, an agent reply with its delivery and a plain
// message match the TicketMessage schema, and the mail and delivery
// objects carry what the README says.
func TestMessageMailAndDeliveryMatchTheContract(t *testing.T) {
	doc, err := apicontract.Load("../../../../gateway/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	base := tickets.Message{ID: 5, CustomerID: 1, TicketID: 2, SenderType: tickets.SenderEndUser, Text: "It broke.",
		AIReply: tickets.AIReply{Status: tickets.AIReplyNone}, CustomFields: json.RawMessage(`{}`), CreatedAt: at, UpdatedAt: at}
	fromMail := base
	fromMail.Mail = &tickets.MailFacts{ChannelID: 3, ProviderMessageID: "AAMk", InternetMessageID: "<m@x>",
		From: contracts.MailAddress{Name: "Ada", Address: "ada@example.com"}, To: []contracts.MailAddress{{Address: "s@shop.example"}},
		Subject: "Broken", ReceivedAt: at.Add(-time.Minute), HTML: "<p>It broke.</p>", Truncated: true,
		Skipped: []tickets.SkippedAttachment{{Name: "big.iso", Size: 1 << 30, Reason: tickets.SkipTooLarge}}}
	reply := base
	reply.SenderType = tickets.SenderAgent
	reply.Delivery = &tickets.Delivery{Status: tickets.DeliveryFailed, Attempts: 3, Error: "mailbox full", UpdatedAt: at}
	prepared := base
	prepared.AIReply.Text, prepared.AIReply.Status, prepared.AIReply.CreatedAt = "Hi Ada", tickets.AIReplyPrepared, &at
	prepared.AIReply.Provenance = &assistant.Provenance{Engine: "offline", Model: "bm25-v1"}
	detected := base
	detected.Topics = []tickets.MessageTopic{{ID: 7, TopicID: 8, TopicName: "Invoices"}}
	detected.TopicsSource = tickets.SourceAuto
	tests := []struct {
		name string
		m    tickets.Message
		want []string
	}{
		{"plain", base, []string{`"mail":null`, `"delivery":null`, `"topics":[],"topicsSource":null`,
			`"aiReply":{"text":null,"status":"none","dateCreated":null,"engine":null,"model":null}`}},
		{"prepared by the assistant", prepared, []string{
			`"aiReply":{"text":"Hi Ada","status":"prepared","dateCreated":"2025-03-04T05:06:07Z","engine":"offline","model":"bm25-v1"}`}},
		{"from mail", fromMail, []string{`"mail":{"from":{"name":"Ada","address":"ada@example.com"},"to":[{"name":"","address":"s@shop.example"}],"cc":[],` +
			`"subject":"Broken","internetMessageID":"\u003cm@x\u003e","receivedAt":"2025-03-04T05:05:07Z","html":"\u003cp\u003eIt broke.\u003c/p\u003e",` +
			`"truncated":true,"skippedAttachments":[{"name":"big.iso","size":1073741824,"reason":"too-large"}]}`}},
		{"topics detected", detected, []string{`"topics":[{"ticketMessageTopicID":7,"topicID":8,"topicName":"Invoices"}],"topicsSource":"auto"`}},
		{"reply", reply, []string{`"delivery":{"status":"failed","attempts":3,"error":"mailbox full","dateUpdated":"2025-03-04T05:06:07Z"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := json.Marshal(toMessage(tt.m))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(body), w) {
					t.Fatalf("%s\ndoes not contain\n%s", body, w)
				}
			}
			h := http.Header{"Content-Type": []string{"application/json; charset=utf-8"}}
			if err := doc.ValidateResponse(httptest.NewRequest(http.MethodGet, "/api/TicketMessages/5", nil), 200, h, body); err != nil {
				t.Fatal(err)
			}
		})
	}
}
