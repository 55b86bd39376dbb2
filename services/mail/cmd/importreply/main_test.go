// In-process tests of the binary: the migrate subcommand and refused
// configuration, the README's table of its variables, and serving: an
// import request on MAIL_IMPORT becomes mails on MAIL_INBOUND, the metrics
// show it, and SIGTERM stops it cleanly.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/config/configtest"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/servicetest"
	"supportplatform.dev/services/mail/internal/graph"
	"supportplatform.dev/services/mail/internal/importer"
	"supportplatform.dev/services/mail/internal/queue"
	"supportplatform.dev/services/mail/internal/replier"
)

func TestMigrateAndCommands(t *testing.T) {
	servicetest.MigrateTest(t, "importreply", run, "mail",
		[]string{"channel_folders", "channel_suspensions", "channels", "mailbox_users", "outbox", "provider_connection_states", "provider_connections", "retired_subscriptions", "schema_migrations", "sent_replies"},
		map[string]string{"IMPORT_CONCURRENCY": "0"},
		map[string]string{"IMPORT_PAGE_SIZE": "5000"},
		map[string]string{"IMPORT_ACK_WAIT": "1s"},
		map[string]string{"IMPORT_LOOKBACK": "yesterday"},
		map[string]string{"GRAPH_CLIENT_ID": "app"}) // no secret
}

// fakeGraph serves one folder's mails: one delta page, then nothing new.
// With gate set, a delta query and a sent mail first report on entered
// and wait for the gate (held in flight across SIGTERM).
type fakeGraph struct {
	mu      sync.Mutex
	mails   []importer.Message
	rounds  int
	gate    chan struct{}
	entered chan string
	sends   int
}

// hold reports what entered and waits for the gate, if there is one.
func (g *fakeGraph) hold(what string) {
	if g.gate != nil {
		g.entered <- what
		<-g.gate
	}
}

func (g *fakeGraph) MessagesDelta(_ context.Context, tenant string, q importer.DeltaQuery, link string) (importer.DeltaPage, error) {
	g.hold("import")
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rounds++
	if tenant != "contoso.onmicrosoft.com" || q.Mailbox != "support@contoso.com" || q.FolderID != "inbox" {
		return importer.DeltaPage{}, fmt.Errorf("fake graph: %s %+v", tenant, q)
	}
	if link != "" {
		return importer.DeltaPage{DeltaLink: "delta:2"}, nil
	}
	var page importer.DeltaPage
	for _, m := range g.mails {
		page.Messages = append(page.Messages, importer.MessageChange{ID: m.ID, From: m.From, ReceivedDateTime: m.ReceivedDateTime})
	}
	page.DeltaLink = "delta:1"
	return page, nil
}

func (g *fakeGraph) Message(_ context.Context, _, _, id string) (importer.Message, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, m := range g.mails {
		if m.ID == id {
			return m, nil
		}
	}
	return importer.Message{}, notFound
}

func (g *fakeGraph) Attachments(context.Context, string, string, string) ([]importer.Attachment, error) {
	return nil, nil
}

func (g *fakeGraph) AttachmentContent(context.Context, string, string, string, string) (io.ReadCloser, error) {
	return nil, notFound
}

var notFound = &importer.ProviderError{Class: importer.ErrNotFound, Err: errors.New("fake graph: 404")}

// Reply and SendMail send only in the SIGTERM test (with a gate).
func (g *fakeGraph) Reply(ctx context.Context, tenant, mailbox, _ string, m replier.OutgoingMail) error {
	return g.SendMail(ctx, tenant, mailbox, m)
}

func (g *fakeGraph) SendMail(context.Context, string, string, replier.OutgoingMail) error {
	if g.gate == nil {
		return errors.New("not in this test")
	}
	g.hold("reply")
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sends++
	return nil
}

func withGraph(g MailGraph, got *Config) servicetest.Run {
	return func(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
		return runWith(ctx, args, getenv, stdout, func(cfg Config, now func() time.Time, _ graph.MailboxLimiter) (MailGraph, error) {
			*got = cfg
			return g, nil
		})
	}
}

func TestServeImportsAndStops(t *testing.T) {
	now := time.Now()
	g := &fakeGraph{mails: []importer.Message{
		{ID: "AAMk-1", Subject: "Printer on fire", From: importer.Address{Name: "Jane", Address: "jane@fabrikam.com"}, ReceivedDateTime: now, BodyText: "help"},
		{ID: "AAMk-2", Subject: "Re: Printer", From: importer.Address{Address: "support@contoso.com"}, ReceivedDateTime: now}, // our own
	}}
	var cfg Config
	svc := servicetest.Start(t, "importreply", withGraph(g, &cfg), servicetest.Options{Env: map[string]string{"IMPORT_CONCURRENCY": "3"}})
	if cfg.Concurrency != 3 || cfg.AckWait != 2*time.Minute || cfg.Lookback != 24*time.Hour || cfg.PageSize != 50 ||
		cfg.AttachmentMaxBytes != 25<<20 || cfg.MaxDeliver != 6 {
		t.Fatalf("config %+v", cfg)
	}
	ctx := context.Background()
	conn, bus, channelID, folderID := queueImport(t, svc, now)
	inbound, err := bus.JS.Stream(ctx, bus.Names.Stream(contracts.StreamMailInbound))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		info, err := inbound.Info(ctx)
		if err == nil && info.State.Msgs == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no mail on MAIL_INBOUND (%v):\n%s", err, svc.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
	msg, err := inbound.GetLastMsgForSubject(ctx, bus.Names.Subject(contracts.MailInboundSubject(channelID)))
	if err != nil {
		t.Fatal(err)
	}
	var in contracts.InboundMail
	if err := json.Unmarshal(msg.Data, &in); err != nil || in.ProviderMessageID != "AAMk-1" || in.Subject != "Printer on fire" ||
		in.CustomerID != 5 || in.FolderID != folderID || in.From.Address != "jane@fabrikam.com" {
		t.Fatalf("mail %+v, %v", in, err)
	}
	// The request is acknowledged: the work queue is empty.
	imports, err := bus.JS.Stream(ctx, bus.Names.Stream(contracts.StreamMailImport))
	if err != nil {
		t.Fatal(err)
	}
	for {
		info, err := imports.Info(ctx)
		if err == nil && info.State.Msgs == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the import request was not acknowledged:\n%s", svc.Logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var link string
	if err := conn.QueryRow(ctx, `SELECT delta_link FROM mail.channel_folders WHERE folder_id = $1`, folderID).Scan(&link); err != nil || link != "delta:1" {
		t.Fatalf("delta link %q, %v", link, err)
	}
	resp, err := http.Get(svc.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`mail_import_rounds_total{outcome="ok"} 1`, "mail_import_messages_published_total 1",
		`mail_import_messages_skipped_total{reason="own"} 1`, "mail_import_resyncs_total 0", "mail_import_round_duration_seconds_count 1"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if err := svc.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if strings.Contains(svc.Logs(), `"level":"ERROR"`) {
		t.Fatalf("errors logged:\n%s", svc.Logs())
	}
}

// Every variable is in the mail README or the repository README's common
// configuration.
func TestREADMEDocumentsEveryVariable(t *testing.T) {
	configtest.RequireDocumented(t, "../../README.md", Config{})
}

// SIGTERM with an import and a reply in hand (both consumers on
// natsbus.Consume): the service stops listening, takes nothing more, and
// run returns only once both finished and were acknowledged; nothing is
// logged at error level.
func TestSIGTERMFinishesImportAndReplyInHand(t *testing.T) {
	sig, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	now := time.Now()
	g := &fakeGraph{mails: []importer.Message{{ID: "AAMk-1", Subject: "Printer on fire", From: importer.Address{Address: "jane@fabrikam.com"},
		ReceivedDateTime: now, BodyText: "help"}}, gate: make(chan struct{}), entered: make(chan string, 4)}
	var cfg Config
	svc := servicetest.Start(t, "importreply", withGraph(g, &cfg), servicetest.Options{Context: sig,
		Env: map[string]string{"SHUTDOWN_GRACE": "20s", "LOG_LEVEL": "info"}})
	ctx := context.Background()
	conn, bus, channelID, folderID := queueImport(t, svc, now)
	ev := contracts.Event[contracts.ReplySent]{ID: "ev-sigterm", Type: contracts.EventReplySent, CustomerID: 5, OccurredAt: now,
		Data: contracts.ReplySent{MessageID: 900, InReplyToID: 899, TicketID: 7, ChannelID: channelID, EndUserID: 3,
			Text: "Hello", Subject: "Printer on fire", TicketRef: "7-K7QX9M2PAB",
			To: contracts.MailAddress{Name: "Jane", Address: "jane@fabrikam.com"}}}
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.PublishRaw(ctx, contracts.EventSubject(contracts.EventReplySent), ev.ID, data); err != nil {
		t.Fatal(err)
	}
	inHand := map[string]bool{}
	for len(inHand) < 2 {
		select {
		case what := <-g.entered:
			inHand[what] = true
		case <-time.After(15 * time.Second):
			t.Fatalf("in hand: %v\n%s", inHand, svc.Logs())
		}
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	probe := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, err := probe.Get(svc.URL + "/healthz")
		if err != nil {
			break // the listener is closed: shutdown has begun
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("still listening 10 s after SIGTERM")
		}
	}
	// The shutdown waits on the two in hand (as servicetest.ShutdownTest
	// waits on RPCs in hand): it says so, and run has not returned.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(svc.Logs(), "shutdown: waiting for the handlers in hand"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the shutdown did not wait for the handlers in hand:\n%s", svc.Logs())
		}
	}
	if svc.Returned() {
		t.Fatalf("run returned with an import and a reply in hand:\n%s", svc.Logs())
	}
	close(g.gate)
	if err := svc.Wait(30 * time.Second); err != nil {
		t.Fatalf("run after SIGTERM: %v\n%s", err, svc.Logs())
	}
	// Both finished and were acknowledged before run returned.
	imports, err := bus.JS.Stream(ctx, bus.Names.Stream(contracts.StreamMailImport))
	if err != nil {
		t.Fatal(err)
	}
	if info, err := imports.Info(ctx); err != nil || info.State.Msgs != 0 {
		t.Fatalf("the import request was not acknowledged: %+v, %v", info, err)
	}
	replies, err := bus.JS.Consumer(ctx, bus.Names.Stream(contracts.StreamEvents), bus.Names.Stream(contracts.DurableImportWorkerReplies))
	if err != nil {
		t.Fatal(err)
	}
	if info, err := replies.Info(ctx); err != nil || info.NumAckPending != 0 || info.AckFloor.Consumer != 1 {
		t.Fatalf("the reply event was not acknowledged: %+v, %v", info, err)
	}
	var status string
	if err := conn.QueryRow(ctx, `SELECT status FROM mail.sent_replies WHERE customer_id = 5 AND message_id = 900`).Scan(&status); err != nil || status != "sent" {
		t.Fatalf("reply %q, %v", status, err)
	}
	var link string
	if err := conn.QueryRow(ctx, `SELECT delta_link FROM mail.channel_folders WHERE folder_id = $1`, folderID).Scan(&link); err != nil || link != "delta:1" {
		t.Fatalf("delta link %q, %v", link, err)
	}
	if strings.Contains(svc.Logs(), `"level":"ERROR"`) {
		t.Fatalf("errors logged:\n%s", svc.Logs())
	}
}

// queueImport gives customer 5 a connected tenant, a subscribed microsoft365
// channel with its inbox, and queues an import of the inbox on the
// service's NATS; the connection and the harness's bus are closed at the
// end of the test.
func queueImport(t *testing.T, svc *servicetest.Service, now time.Time) (*pgx.Conn, *natsbus.Bus, int64, int64) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, svc.Env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	var channelID, folderID int64
	if err := conn.QueryRow(ctx, `WITH p AS (INSERT INTO mail.provider_connections (customer_id, status, tenant_id, started_by, connected_at)
		VALUES (5, 'connected', 'contoso.onmicrosoft.com', 1, now())),
		c AS (INSERT INTO mail.channels (customer_id, name, kind, email_address, provider, provider_tenant_id, auto_retrieve_emails)
		VALUES (5, 'support', 'email', 'support@contoso.com', 'microsoft365', 'contoso.onmicrosoft.com', true) RETURNING channel_id)
		INSERT INTO mail.channel_folders (customer_id, channel_id, external_folder_id, auto_retrieve_emails)
		SELECT 5, channel_id, 'inbox', true FROM c RETURNING channel_id, folder_id`).Scan(&channelID, &folderID); err != nil {
		t.Fatal(err)
	}
	bus, err := natsbus.Connect(svc.Env["NATS_URL"], "harness", contracts.Names{Prefix: svc.Env["NATS_PREFIX"]}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.Close(ctx) })
	q, err := queue.New(ctx, bus)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Import(ctx, contracts.MailImportRequest{CustomerID: 5, ChannelID: channelID, FolderID: folderID,
		Reason: contracts.ImportNotification, RequestedAt: now.Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	return conn, bus, channelID, folderID
}
