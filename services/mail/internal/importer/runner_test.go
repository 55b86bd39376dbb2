package importer_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/services/mail/internal/importer"
	"supportplatform.dev/services/mail/internal/postgres"
)

// newLockPool is a pool of its own on e's database, as another replica's.
func newLockPool(t *testing.T, e *env) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.NewWithConfig(context.Background(), e.pool.Config().Copy())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func (e *env) runner(g importer.Graph, locks importer.Locker) *importer.Runner {
	if locks == nil {
		locks = postgres.NewImportLocks(e.pool)
	}
	return importer.NewRunner(importer.RunnerOptions{Store: e.store, Locker: locks, Importer: e.importer(g, time.Now),
		Log: discard()})
}

// A failed fetch stores no delta link; the next run publishes again and
// the stream, deduplicating by message id, holds each mail once.
func TestFailedRoundStoresNoLinkAndTheRerunPublishesOnce(t *testing.T) {
	e := newEnv(t)
	tg := e.folder(t)
	g := newFakeGraph()
	for i := range 7 {
		m := mailFrom(i, "jane@fabrikam.com")
		m.ReceivedDateTime = time.Now().Add(-time.Minute)
		g.add(m)
	}
	g.failing["AAMkId-05"] = errServer(500)
	r := e.runner(g, nil)
	ctx := context.Background()
	if err := r.Import(ctx, 1, tg.ChannelID, tg.FolderID); err == nil {
		t.Fatal("a round with a failed fetch succeeded")
	}
	st, err := e.store.ImportState(ctx, 1, tg.FolderID)
	if err != nil || st.DeltaLink != "" || st.LastImportAt != nil || st.LastImportError == "" {
		t.Fatalf("after the failure: %+v, %v", st, err)
	}
	delete(g.failing, "AAMkId-05")
	if err := r.Import(ctx, 1, tg.ChannelID, tg.FolderID); err != nil {
		t.Fatal(err)
	}
	st, err = e.store.ImportState(ctx, 1, tg.FolderID)
	if err != nil || st.DeltaLink != "delta:7" || st.LastImportError != "" || st.ImportedTotal != 7 {
		t.Fatalf("after the rerun: %+v, %v", st, err)
	}
	mails, _ := e.mails(t)
	seen := map[string]int{}
	for _, m := range mails {
		seen[m.ProviderMessageID]++
	}
	if len(mails) != 7 || len(seen) != 7 {
		t.Fatalf("stream holds %d mails of %d ids, want 7 once each", len(mails), len(seen))
	}
	// The stored link is used: the next run asks only for what is new.
	if err := r.Import(ctx, 1, tg.ChannelID, tg.FolderID); err != nil {
		t.Fatal(err)
	}
	if q := g.queries[len(g.queries)-1]; !q.Since.IsZero() {
		t.Fatalf("a run with a stored link asked for the look-back window: %+v", q)
	}
}

// A request that arrives while the folder is imported is satisfied by
// exactly one more run, however many arrive.
func TestRequestsDuringARunCauseOneMoreRun(t *testing.T) {
	e := newEnv(t)
	tg := e.folder(t)
	g := newFakeGraph()
	g.gate = make(chan struct{})
	r := e.runner(g, nil)
	ctx := context.Background()
	first := make(chan error, 1)
	go func() { first <- r.Import(ctx, 1, tg.ChannelID, tg.FolderID) }()
	<-g.inRound
	// Three requests while the first round runs: each finds the lock held
	// and returns at once.
	for range 3 {
		if err := r.Import(ctx, 1, tg.ChannelID, tg.FolderID); err != nil {
			t.Fatal(err)
		}
	}
	if n := g.roundCount(); n != 1 {
		t.Fatalf("%d rounds while the first was held", n)
	}
	close(g.gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if n := g.roundCount(); n != 2 {
		t.Fatalf("%d rounds, want 2 (the first and one more for the requests during it)", n)
	}
	// No request during a run: one run.
	if err := r.Import(ctx, 1, tg.ChannelID, tg.FolderID); err != nil {
		t.Fatal(err)
	}
	if n := g.roundCount(); n != 3 {
		t.Fatalf("%d rounds, want 3", n)
	}
}

// countingStore numbers the import requests in the order they are made.
type countingStore struct {
	importer.Store
	seq  func() int64
	mu   sync.Mutex
	last int64
}

func (s *countingStore) RequestImport(ctx context.Context, customerID, folderID int64, at time.Time) error {
	err := s.Store.RequestImport(ctx, customerID, folderID, at)
	s.mu.Lock()
	s.last = max(s.last, s.seq())
	s.mu.Unlock()
	return err
}

// Two workers (each with its own lock pool, as two replicas) importing one
// folder at once never overlap, and the last round starts after the last
// request: none is lost.
func TestTwoWorkersNeverOverlap(t *testing.T) {
	e := newEnv(t)
	tg := e.folder(t)
	var seq atomic.Int64
	g := newFakeGraph()
	g.seq = func() int64 { return seq.Add(1) }
	g.delay = 3 * time.Millisecond
	store := &countingStore{Store: e.store, seq: g.seq}
	var runners []*importer.Runner
	for range 2 {
		runners = append(runners, importer.NewRunner(importer.RunnerOptions{Store: store,
			Locker: postgres.NewImportLocks(newLockPool(t, e)), Importer: e.importer(g, time.Now), Log: discard()}))
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for w := range 2 {
		for range 20 {
			wg.Go(func() { errs <- runners[w].Import(ctx, 1, tg.ChannelID, tg.FolderID) })
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.overlaps != 0 {
		t.Fatalf("%d rounds overlapped another", g.overlaps)
	}
	if len(g.roundSeq) == 0 || g.roundSeq[len(g.roundSeq)-1] < store.last {
		t.Fatalf("the last round (%v) started before the last request (%d)", g.roundSeq, store.last)
	}
	t.Logf("%d requests, %d rounds", 40, len(g.roundSeq))
}

// A request for a folder that is gone or not imported is dropped.
func TestRequestsForGoneFoldersAreDropped(t *testing.T) {
	e := newEnv(t)
	tg := e.folder(t)
	g := newFakeGraph()
	r := e.runner(g, nil)
	ctx := context.Background()
	cases := []struct {
		name                      string
		customer, channel, folder int64
		prepare                   func()
	}{
		{name: "unknown folder", customer: 1, channel: tg.ChannelID, folder: tg.FolderID + 100},
		{name: "another customer's", customer: 2, channel: tg.ChannelID, folder: tg.FolderID},
		{name: "switched off", customer: 1, channel: tg.ChannelID, folder: tg.FolderID, prepare: func() {
			if _, err := e.pool.Exec(ctx, `UPDATE channel_folders SET auto_retrieve_emails = false`); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "deleted channel", customer: 1, channel: tg.ChannelID, folder: tg.FolderID, prepare: func() {
			if _, err := e.store.DeleteChannel(ctx, 1, tg.ChannelID); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.prepare != nil {
				tc.prepare()
			}
			if err := r.Import(ctx, tc.customer, tc.channel, tc.folder); !errors.Is(err, importer.ErrDropped) {
				t.Fatalf("error %v, want dropped", err)
			}
		})
	}
	if n := g.roundCount(); n != 0 {
		t.Fatalf("%d rounds for dropped requests", n)
	}
}
