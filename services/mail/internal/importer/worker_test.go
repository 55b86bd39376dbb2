package importer_test

import (
	"context"
	"testing"
	"time"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/services/mail/internal/importer"
	"supportplatform.dev/services/mail/internal/queue"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The consumer end to end: import requests on MAIL_IMPORT become mails on
// MAIL_INBOUND and are acknowledged; a slow import confirms progress and
// is not delivered twice; a failed one comes again and succeeds; a request
// for a gone folder is acknowledged and dropped; the bus's drain stops it.
func TestWorkerConsumesImportRequests(t *testing.T) {
	e := newEnv(t)
	tg := e.folder(t)
	g := newFakeGraph()
	for i := range 3 {
		m := mailFrom(i, "jane@fabrikam.com")
		m.ReceivedDateTime = time.Now().Add(-time.Minute)
		g.add(m)
	}
	g.gate = make(chan struct{})
	r := e.runner(g, nil)
	w := importer.NewWorker(importer.WorkerOptions{Runner: r, Concurrency: 2, AckWait: 600 * time.Millisecond,
		MaxDeliver: 4, Retry: []time.Duration{50 * time.Millisecond}, Log: discard()})
	ctx, cancel := context.WithCancel(context.Background())
	// The queue (an idempotent stream update) before the worker makes its
	// consumer: nats-server races a stream update against a consumer
	// creation on the same stream (its own data race, seen with -race).
	q, err := queue.New(ctx, e.bus)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, e.bus)
	}()
	req := contracts.MailImportRequest{CustomerID: 1, ChannelID: tg.ChannelID, FolderID: tg.FolderID,
		Reason: contracts.ImportNotification, RequestedAt: time.Now()}
	if err := q.Import(ctx, req); err != nil {
		t.Fatal(err)
	}
	requested := time.Now()
	<-g.inRound
	// The request's bucket ends no earlier than its NotBefore.
	if notBefore := contracts.MailImportNotBefore(req.RequestedAt); time.Now().Before(notBefore) {
		t.Fatalf("the import started before the request's NotBefore %v", notBefore)
	}
	// Held for three AckWaits: progress confirmations keep it ours.
	time.Sleep(1800 * time.Millisecond)
	close(g.gate)
	waitFor(t, "three mails on MAIL_INBOUND", 10*time.Second, func() bool {
		mails, _ := e.mails(t)
		return len(mails) == 3
	})
	cons, err := e.bus.JS.Consumer(ctx, e.bus.Names.Stream(contracts.StreamMailImport), e.bus.Names.Stream(importer.DurableName))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the request acknowledged", 5*time.Second, func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
	info, _ := cons.Info(ctx)
	if info.NumRedelivered != 0 || info.Config.AckWait != 600*time.Millisecond {
		t.Fatalf("consumer %+v", info)
	}
	st, err := e.store.ImportState(ctx, 1, tg.FolderID)
	if err != nil || st.DeltaLink != "delta:3" {
		t.Fatalf("state %+v, %v (requested %v)", st, err, requested)
	}

	// A failing import is handed back and comes again.
	g.add(mailFrom(3, "late@fabrikam.com"))
	g.mu.Lock()
	g.messages[3].ReceivedDateTime = time.Now()
	g.failing["AAMkId-03"] = errServer(503)
	g.mu.Unlock()
	rounds := g.roundCount()
	if err := q.Import(ctx, contracts.MailImportRequest{CustomerID: 1, ChannelID: tg.ChannelID, FolderID: tg.FolderID,
		Reason: contracts.ImportCatchUp, RequestedAt: time.Now().Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a second delivery", 10*time.Second, func() bool { return g.roundCount() >= rounds+2 })
	g.mu.Lock()
	delete(g.failing, "AAMkId-03")
	g.mu.Unlock()
	waitFor(t, "the late mail", 10*time.Second, func() bool {
		mails, _ := e.mails(t)
		return len(mails) == 4
	})
	waitFor(t, "the retried request acknowledged", 5*time.Second, func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})

	// A request for a gone folder is acknowledged without a round.
	rounds = g.roundCount()
	if err := q.Import(ctx, contracts.MailImportRequest{CustomerID: 1, ChannelID: tg.ChannelID, FolderID: tg.FolderID + 1000,
		Reason: contracts.ImportNotification, RequestedAt: time.Now().Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the dropped request acknowledged", 5*time.Second, func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0 && info.Delivered.Consumer >= 4
	})
	if g.roundCount() != rounds {
		t.Fatal("a round ran for a gone folder")
	}
	// Run returned once the consumer ran; the bus's drain stops it.
	<-done
	cancel()
	if err := e.bus.DrainSubscriptions(context.Background()); err != nil {
		t.Fatal(err)
	}
}
