package eventstream_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/outbox"
	"supportplatform.dev/services/live/internal/eventstream"
)

// A console's event carries ids and states only: never a message text, a
// subject, an address, a comment or an error text.
func TestProjectKeepsIdsAndStatesOnly(t *testing.T) {
	rep := int64(4)
	cases := []struct {
		name string
		typ  string
		data any
		want map[string]any
	}{
		{"reply sent", contracts.EventReplySent, contracts.ReplySent{MessageID: 2, InReplyToID: 1, TicketID: 3, Text: "the reply",
			Subject: "Re: x", To: contracts.MailAddress{Address: "a@example.org", Name: "A"}, Modified: true},
			map[string]any{"messageID": 2.0, "inReplyToID": 1.0, "ticketID": 3.0, "modified": true}},
		{"escalated", contracts.EventMessageEscalated, contracts.MessageEscalated{MessageID: 2, TicketID: 3, FeedbackComment: "bad", Email: "a@example.org"},
			map[string]any{"messageID": 2.0, "ticketID": 3.0}},
		{"delivery failed", contracts.EventReplyFailed, contracts.ReplyDelivery{MessageID: 2, TicketID: 3, Attempts: 5, Error: "mailbox full at user@example.org"},
			map[string]any{"messageID": 2.0, "ticketID": 3.0, "attempts": 5.0}},
		{"assigned", contracts.EventTicketUpdated, contracts.TicketChanged{TicketID: 3, CustomerRepID: &rep, Subject: "s", Status: "Open", PreviousStatus: "New"},
			map[string]any{"ticketID": 3.0, "customerRepID": 4.0, "status": "Open", "previousStatus": "New"}},
		{"end user", contracts.EventEndUserUpdated, contracts.EndUserChanged{EndUserID: 9, Name: "Ada", Email: "ada@example.org"},
			map[string]any{"endUserID": 9.0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := outbox.Event(context.Background(), tc.typ, 7, time.Now(), tc.data)
			if err != nil {
				t.Fatal(err)
			}
			e, err := eventstream.Project(42, m.Data)
			if err != nil {
				t.Fatal(err)
			}
			if e.Seq != 42 || e.CustomerID != 7 || e.Type != tc.typ {
				t.Fatalf("%+v", e)
			}
			for _, secret := range []string{"example.org", "the reply", "bad", "Ada", "Re: x", "mailbox full"} {
				if strings.Contains(string(e.Data), secret) {
					t.Fatalf("%q forwarded: %s", secret, e.Data)
				}
			}
			var got map[string]any
			if err := json.Unmarshal(e.Data, &got); err != nil {
				t.Fatal(err)
			}
			if got["type"] != tc.typ || got["occurredAt"] == nil {
				t.Fatalf("%s", e.Data)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v (%s)", k, got[k], v, e.Data)
				}
			}
		})
	}
	if _, err := eventstream.Project(1, []byte(`{"type":"ticket.created","customerID":0,"data":{}}`)); err == nil {
		t.Error("an event without a customer was projected")
	}
}
