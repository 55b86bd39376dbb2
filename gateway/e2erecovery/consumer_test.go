package e2erecovery

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/gateway/e2e"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
)

// A second tickets process shares the MAIL_INBOUND consumer with the
// stack's own and gets SIGTERM in the middle of a stream of imported
// mails. It stops after handling and acknowledging what it had received:
// it exits cleanly, every mail becomes exactly one ticket within seconds
// (a mail it held without acknowledging would wait a minute, the
// consumer's AckWait, for a redelivery), and the consumer delivered each
// mail exactly once (no redelivery: nothing was done twice).
func TestSIGTERMStopsAConsumerCleanly(t *testing.T) {
	f := newFixture(t)
	c := e2e.NewClient(t, stk.HTTPSURL, stk.HTTPClient(), api)
	ch := e2e.CreateChannel(t, c, f.tn, e2e.EmailChannel(false))
	r, err := stk.StartReplica(t.Context(), "tickets")
	if err != nil {
		t.Fatal(err)
	}
	stream := backends.Names.Stream(contracts.StreamMailInbound)
	const n = 400
	run := randid.Hex(4)
	publish := func(i int) {
		now := time.Now().UTC()
		m := contracts.InboundMail{CustomerID: f.tn.CustomerID, ChannelID: ch.ChannelID, FolderID: 1,
			Mailbox: *ch.EmailAddress, ProviderMessageID: fmt.Sprintf("AAMk-%s-%04d", run, i),
			Subject:    fmt.Sprintf("Shutdown mail %s %04d", run, i),
			From:       contracts.MailAddress{Name: "Sender", Address: fmt.Sprintf("sender-%d@customer.example", i%20)},
			ReceivedAt: now, BodyText: "mail body", ImportedAt: now}
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		_, err = backends.JS.Publish(t.Context(), backends.Names.Subject(contracts.MailInboundSubject(ch.ChannelID)), data,
			jetstream.WithMsgID(contracts.MailInboundMsgID(ch.ChannelID, m.ProviderMessageID)))
		if err != nil {
			t.Fatalf("publish mail %d: %v", i, err)
		}
	}
	before := consumerInfo(t, stream)
	for i := range n / 2 {
		publish(i)
	}
	signalled := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- r.Stop() }()
	for i := n / 2; i < n; i++ {
		publish(i)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("the tickets replica did not exit cleanly after SIGTERM: %v", err)
	}
	t.Logf("the tickets replica exited %s after SIGTERM", time.Since(signalled).Round(time.Millisecond))

	var tickets, messages, distinct int
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := backends.DB.QueryRow(t.Context(), `SELECT count(DISTINCT t.ticket_id), count(m.message_id), count(DISTINCT m.provider_message_id)
			FROM tickets.tickets t JOIN tickets.ticket_messages m ON m.ticket_id = t.ticket_id WHERE t.channel_id = $1`,
			ch.ChannelID).Scan(&tickets, &messages, &distinct)
		if err != nil {
			t.Fatal(err)
		}
		if distinct >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if tickets != n || messages != n || distinct != n {
		t.Fatalf("30 s after SIGTERM: %d tickets, %d messages, %d distinct mails; want %d each", tickets, messages, distinct, n)
	}
	after := consumerInfo(t, stream)
	deliveries := after.Delivered.Consumer - before.Delivered.Consumer
	t.Logf("%d mails, %d deliveries, %d waiting for an ack, %d redelivered", n, deliveries, after.NumAckPending, after.NumRedelivered)
	if deliveries != n || after.NumAckPending != 0 || after.NumRedelivered != 0 {
		t.Fatalf("%d deliveries of %d mails, %d unacknowledged, %d redelivered: a mail was delivered twice or left unacknowledged",
			deliveries, n, after.NumAckPending, after.NumRedelivered)
	}
}

// consumerInfo returns the state of the one consumer on stream: the
// tickets' durable one.
func consumerInfo(t *testing.T, stream string) *jetstream.ConsumerInfo {
	t.Helper()
	st, err := backends.JS.Stream(t.Context(), stream)
	if err != nil {
		t.Fatal(err)
	}
	names := st.ConsumerNames(t.Context())
	var all []string
	for name := range names.Name() {
		all = append(all, name)
	}
	if len(all) != 1 {
		t.Fatalf("consumers on %s: %v, want the tickets' one", stream, all)
	}
	cons, err := st.Consumer(t.Context(), all[0])
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return info
}
