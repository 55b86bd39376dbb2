package mailin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/services/tickets/internal/mailin"
	"supportplatform.dev/services/tickets/internal/tickets"
)

type recordingDelivery struct{ calls []string }

func (s *recordingDelivery) SetDelivery(_ context.Context, customerID, messageID int64, d tickets.Delivery) (bool, error) {
	s.calls = append(s.calls, fmt.Sprintf("%s %s %s %d/%d x%d", d.Status, d.Error, d.UpdatedAt.Format(time.RFC3339),
		customerID, messageID, d.Attempts))
	return true, nil
}

func TestHandleDelivery(t *testing.T) {
	at := time.Date(2025, 2, 3, 4, 5, 6, 0, time.FixedZone("", 3600))
	ev := func(typ string, customerID int64, data string) contracts.Event[json.RawMessage] {
		return contracts.Event[json.RawMessage]{ID: "e", Type: typ, CustomerID: customerID, OccurredAt: at, Data: json.RawMessage(data)}
	}
	tests := []struct {
		name      string
		ev        contracts.Event[json.RawMessage]
		want      []string
		permanent bool
	}{
		{"delivered", ev(contracts.EventReplyDelivered, 3, `{"messageID":7,"ticketID":1,"attempts":2,"error":"ignored"}`),
			[]string{"sent  2025-02-03T03:05:06Z 3/7 x2"}, false},
		{"failed", ev(contracts.EventReplyFailed, 3, `{"messageID":7,"ticketID":1,"attempts":5,"error":"mailbox\nfull"}`),
			[]string{"failed mailbox full 2025-02-03T03:05:06Z 3/7 x5"}, false},
		{"sent is ignored", ev(contracts.EventReplySent, 3, `{"messageID":7}`), nil, false},
		{"no customer", ev(contracts.EventReplyFailed, 0, `{"messageID":7}`), nil, false},
		{"no message", ev(contracts.EventReplyFailed, 3, `{"ticketID":7}`), nil, false},
		{"undecodable", ev(contracts.EventReplyFailed, 3, `"x"`), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &recordingDelivery{}
			err := mailin.HandleDelivery(context.Background(), st, tt.ev)
			if tt.permanent != errors.Is(err, natsbus.ErrPermanent) || (!tt.permanent && err != nil) {
				t.Fatalf("error %v", err)
			}
			if !reflect.DeepEqual(st.calls, tt.want) {
				t.Fatalf("calls %q, want %q", st.calls, tt.want)
			}
		})
	}
}

// The consumer on EVENTS: reports of the mail context set the reply's
// delivery; an older one after a newer one, and message.reply.sent, change
// nothing.
func TestDeliveryConsumer(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if err := e.bus.EnsureEventsStream(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mailin.StartDelivery(ctx, e.bus, e.store); err != nil {
		t.Fatal(err)
	}
	out, err := e.importer.Handle(ctx, mail("d"), nil)
	if err != nil {
		t.Fatal(err)
	}
	reply, err := e.store.AddMessage(ctx, customer, out.TicketID, tickets.MessageInto(tickets.NewMessage{SenderType: tickets.SenderAgent, Text: "Done.",
		CustomFields: []byte(`{}`)}, time.Now))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	publish := func(typ string, occurred time.Time, d contracts.ReplyDelivery) {
		data, _ := json.Marshal(d)
		ev, _ := json.Marshal(contracts.Event[json.RawMessage]{ID: randid.Hex(8), Type: typ, CustomerID: customer, OccurredAt: occurred, Data: data})
		if err := e.bus.PublishRaw(ctx, contracts.EventSubject(typ), randid.Hex(8), ev); err != nil {
			t.Fatal(err)
		}
	}
	publish(contracts.EventReplySent, now, contracts.ReplyDelivery{MessageID: reply.ID})
	publish(contracts.EventReplyFailed, now, contracts.ReplyDelivery{MessageID: reply.ID, TicketID: out.TicketID, Attempts: 1, Error: "throttled"})
	publish(contracts.EventReplyDelivered, now.Add(2*time.Second), contracts.ReplyDelivery{MessageID: reply.ID, TicketID: out.TicketID, Attempts: 2})
	publish(contracts.EventReplyFailed, now.Add(time.Second), contracts.ReplyDelivery{MessageID: reply.ID, TicketID: out.TicketID, Attempts: 1, Error: "late"})
	settled(t, e.bus, e.names.Stream(contracts.StreamEvents), e.names.Stream(mailin.DeliveryDurable), 4)
	m, err := e.store.Message(ctx, customer, reply.ID)
	if err != nil || m.Delivery == nil {
		t.Fatalf("message %+v %v", m, err)
	}
	if got := *m.Delivery; got.Status != tickets.DeliverySent || got.Attempts != 2 || got.Error != "" || !got.UpdatedAt.Equal(now.Add(2*time.Second)) {
		t.Fatalf("delivery %+v", got)
	}
}
