package e2erecovery

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/gateway/internal/e2ekit"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/randid"
)

// A second tickets process shares the MAIL_INBOUND consumer with the
// stack's own and gets SIGTERM in the middle of a stream of imported
// mails. It stops after handling and acknowledging what it had received:
// it exits cleanly, every mail becomes exactly one ticket within seconds
// (a mail it held without acknowledging would wait a minute, the
// consumer's AckWait, for a redelivery), nothing is left unacknowledged,
// and each mail was handled exactly once across the two processes (their
// logs: nothing was done twice).
func TestSIGTERMStopsAConsumerCleanly(t *testing.T) {
	f := newFixture(t)
	c := e2ekit.NewClient(t, stk.HTTPSURL, stk.HTTPClient(), api)
	ch := e2ekit.CreateChannel(t, c, f.tn, map[string]any{"name": "Support", "kind": "email", "emailAddress": e2ekit.Mailbox()})
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
	// A handling's log line and its ack follow its commit by a moment.
	var after *jetstream.ConsumerInfo
	var handled []string
	for settle := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		after, handled = consumerInfo(t, stream), mailHandlings(t, ch.ChannelID)
		if (after.NumAckPending == 0 && len(handled) >= n) || time.Now().After(settle) {
			break
		}
	}
	deliveries := after.Delivered.Consumer - before.Delivered.Consumer
	t.Logf("%d mails, %d deliveries, %d handlings %v, %d waiting for an ack", n, deliveries, len(handled), outcomeCounts(handled), after.NumAckPending)
	if after.NumAckPending != 0 {
		t.Fatalf("%d mails left unacknowledged", after.NumAckPending)
	}
	// Nothing was done twice: each mail was handled once, by one of the two
	// processes. A delivery may exceed that: a message on its way to the
	// replica when it stopped taking messages is not handled there and the
	// server hands it to the other process.
	if len(handled) != n || outcomeCounts(handled)["new-ticket"] != n {
		t.Fatalf("%d handlings of %d mails (%v): a mail was handled twice or not at all", len(handled), n, outcomeCounts(handled))
	}
	if deliveries < uint64(n) {
		t.Fatalf("%d deliveries of %d mails", deliveries, n)
	}
}

// mailHandlings returns the outcome of every handling of a mail of channel
// in the logs of the tickets processes (the stack's and its replicas; the
// suite runs them at debug level).
func mailHandlings(t *testing.T, channel int64) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(stk.DataDir, "logs", "tickets*.log"))
	if err != nil || len(files) < 2 {
		t.Fatalf("tickets logs: %v %v", files, err)
	}
	var outs []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			var e struct {
				Msg       string `json:"msg"`
				ChannelID int64  `json:"channelID"`
				Outcome   string `json:"outcome"`
			}
			if json.Unmarshal([]byte(line), &e) == nil && e.Msg == "mailin: mail imported" && e.ChannelID == channel {
				outs = append(outs, e.Outcome)
			}
		}
	}
	return outs
}

func outcomeCounts(outs []string) map[string]int {
	m := map[string]int{}
	for _, o := range outs {
		m[o]++
	}
	return m
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
