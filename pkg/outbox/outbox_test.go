package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/outbox/outboxtest"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/pkg/requestid"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

const table = `CREATE TABLE outbox (seq bigserial PRIMARY KEY, event_id text NOT NULL UNIQUE,
	subject text NOT NULL, data bytea NOT NULL, request_id text NOT NULL DEFAULT '',
	created_at timestamptz NOT NULL DEFAULT now());
ALTER TABLE outbox ADD COLUMN traceparent text, ADD COLUMN tracestate text;
CREATE TABLE notes (id bigserial PRIMARY KEY, body text NOT NULL);`

func openDB(t *testing.T) *pgxpool.Pool {
	t.Helper()
	db, err := postgres.Open(context.Background(), postgres.Options{URL: pgtest.NewDatabase(t), Schema: "obx",
		Migrations: fstest.MapFS{"001_init.sql": {Data: []byte(table)}}}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

type env struct {
	db   *pgxpool.Pool
	nats *natstest.Server
	bus  *natsbus.Bus
	cons jetstream.Consumer
}

func setup(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{db: openDB(t), nats: natstest.StartServer(t, nil)}
	var err error
	e.bus, err = natsbus.Connect(e.nats.URL(), "outbox-test", contracts.Names{Prefix: "ob"}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.bus.NC.Close() })
	if err := e.bus.EnsureEventsStream(ctx); err != nil {
		t.Fatal(err)
	}
	e.cons, err = e.bus.JS.CreateOrUpdateConsumer(ctx, e.bus.Names.Stream(contracts.StreamEvents), jetstream.ConsumerConfig{Durable: "reader"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

type noteAdded struct {
	Body string `json:"body"`
}

// write inserts a note and its event in one transaction; fail rolls it back.
func (e *env) write(t *testing.T, ctx context.Context, body string, fail bool) Message {
	t.Helper()
	m, err := Event(ctx, "note.added", 9, time.Now(), noteAdded{Body: body})
	if err != nil {
		t.Fatal(err)
	}
	err = postgres.InTx(ctx, e.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO notes (body) VALUES ($1)`, body); err != nil {
			return err
		}
		if err := Add(ctx, tx, m); err != nil {
			return err
		}
		if fail {
			return errors.New("rolled back")
		}
		return nil
	})
	if (err != nil) != fail {
		t.Fatalf("write %q: %v", body, err)
	}
	return m
}

func (e *env) pending(t *testing.T) int {
	t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM outbox`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// received reads n events from the stream (and fails on more within a short
// wait).
func (e *env) received(t *testing.T, n int) []contracts.Event[noteAdded] {
	t.Helper()
	var out []contracts.Event[noteAdded]
	deadline := time.Now().Add(10 * time.Second)
	for len(out) < n && time.Now().Before(deadline) {
		batch, err := e.cons.FetchNoWait(n - len(out))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			var ev contracts.Event[noteAdded]
			if err := json.Unmarshal(m.Data(), &ev); err != nil {
				t.Fatal(err)
			}
			_ = m.Ack()
			out = append(out, ev)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(out) != n {
		t.Fatalf("received %d events, want %d", len(out), n)
	}
	extra, err := e.cons.Fetch(1, jetstream.FetchMaxWait(200*time.Millisecond))
	if err == nil {
		for m := range extra.Messages() {
			t.Fatalf("unexpected extra event %s", m.Data())
		}
	}
	return out
}

func TestCommittedEventsArePublishedOnceAndRolledBackOnesNever(t *testing.T) {
	e := setup(t)
	ctx := requestid.With(context.Background(), "req-42")
	kept := e.write(t, ctx, "kept", false)
	e.write(t, ctx, "rolled back", true)
	r := NewRelay(e.db, e.bus, quiet)
	n, err := r.Flush(ctx)
	if err != nil || n != 1 {
		t.Fatalf("Flush = %d, %v; want 1 published", n, err)
	}
	got := e.received(t, 1)
	if got[0].ID != kept.ID || got[0].Data.Body != "kept" || got[0].Type != "note.added" || got[0].CustomerID != 9 {
		t.Fatalf("event = %+v", got[0])
	}
	if e.pending(t) != 0 {
		t.Fatal("a published row was left in the outbox")
	}
	if n, err := r.Flush(ctx); err != nil || n != 0 {
		t.Fatalf("second Flush = %d, %v; want nothing to do", n, err)
	}
}

// NATS is down when the change commits: the request that made the change
// does not fail, the event waits in the table, and it is published once NATS
// is back.
func TestEventSurvivesNATSBeingDown(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	e.nats.Stop()
	e.write(t, ctx, "while down", false)
	r := NewRelay(e.db, e.bus, quiet)
	fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	n, err := r.Flush(fctx)
	cancel()
	if err == nil || n != 0 {
		t.Fatalf("Flush with NATS down = %d, %v; want an error and nothing published", n, err)
	}
	if e.pending(t) != 1 {
		t.Fatal("the event is no longer in the outbox after a failed publish")
	}
	e.nats.Start()
	deadline := time.Now().Add(10 * time.Second)
	for {
		fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		n, err = r.Flush(fctx)
		cancel()
		if err == nil && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not published after NATS came back: %d, %v", n, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := e.received(t, 1); got[0].Data.Body != "while down" {
		t.Fatalf("event = %+v", got[0])
	}
}

// A writer of another binary wakes a running relay with Notify, on its
// LISTEN connection, without the poll.
func TestRunWakesOnNotify(t *testing.T) {
	e := setup(t)
	runRelay(t, e)
	notify := Notify(e.db, quiet)
	// Rows committed before LISTEN takes effect are flushed when it does;
	// every later one needs its NOTIFY: with the poll an hour away, each
	// round waits for the one before.
	for i := range 4 {
		e.write(t, context.Background(), fmt.Sprint("n", i), false)
		notify()
		e.received(t, 1)
	}
}

// countingPublisher counts publishes per message id.
type countingPublisher struct {
	next Publisher
	mu   sync.Mutex
	seen map[string]int
}

func (c *countingPublisher) PublishRaw(ctx context.Context, subject, id string, data []byte) error {
	c.mu.Lock()
	c.seen[id]++
	c.mu.Unlock()
	return c.next.PublishRaw(ctx, subject, id, data)
}

// Replicas relaying the same table concurrently publish each row once.
func TestConcurrentRelaysPublishEachRowOnce(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	const rows = 300
	for i := 0; i < rows; i++ {
		e.write(t, ctx, fmt.Sprint("row", i), false)
	}
	pub := &countingPublisher{next: e.bus, seen: map[string]int{}}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		r := NewRelay(e.db, pub, quiet)
		r.batch = 7
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.Flush(ctx)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if e.pending(t) != 0 {
		t.Fatalf("%d rows left", e.pending(t))
	}
	if len(pub.seen) != rows {
		t.Fatalf("%d distinct events published, want %d", len(pub.seen), rows)
	}
	for id, n := range pub.seen {
		if n != 1 {
			t.Fatalf("event %s published %d times", id, n)
		}
	}
	e.received(t, rows)
}

// A message id already waiting is the same message: transactions that add
// it concurrently all commit, and it is written once.
func TestSameMessageIDWrittenOnce(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	m := Message{ID: "import.7.catch-up.42", Subject: "mail.import.7", Data: []byte(`{}`)}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			errs <- postgres.InTx(ctx, e.db, func(tx pgx.Tx) error { return Add(ctx, tx, m) })
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := e.pending(t); n != 1 {
		t.Fatalf("%d rows for one message id", n)
	}
}

// Add sends no NOTIFY: the relays LISTENing on the schema's channel are
// not woken by the write itself.
func TestAddDoesNotNotify(t *testing.T) {
	e := setup(t)
	listener := outboxtest.Listen(t, e.db)
	e.write(t, context.Background(), "quiet", false)
	listener.NoNotify(t)
}

// The writers of the relay's own process wake it with Wake, with no
// NOTIFY and no poll.
func TestRunWakesOnWake(t *testing.T) {
	e := setup(t)
	r := runRelay(t, e)
	// The relay flushes at start and once LISTEN takes effect; at least
	// two of the four rounds need their Wake, each waiting for the last.
	for i := range 4 {
		e.write(t, context.Background(), fmt.Sprint("w", i), false)
		r.Wake()
		e.received(t, 1)
	}
}

// runRelay runs a relay that never polls until the test ends.
func runRelay(t *testing.T, e *env) *Relay {
	t.Helper()
	r := NewRelay(e.db, e.bus, quiet)
	r.poll = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return r
}

// Queue writes in the caller's batch what Add writes: the batch's messages
// are there after the commit, a message id already waiting only once, and
// nothing of a batch whose transaction rolls back.
func TestQueueWritesWithTheBatch(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	m1 := Message{ID: "q.1", Subject: "note.added", Data: []byte(`{}`)}
	m2 := Message{ID: "q.2", Subject: "note.added", Data: []byte(`{}`)}
	send := func(fail bool, msgs ...Message) error {
		return postgres.InTx(ctx, e.db, func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			b.Queue(`INSERT INTO notes (body) VALUES ('queued')`)
			Queue(ctx, b, msgs...)
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
			if fail {
				return errors.New("rolled back")
			}
			return nil
		})
	}
	if err := send(true, Message{ID: "q.3", Subject: "note.added", Data: []byte(`{}`)}); err == nil {
		t.Fatal("the failing transaction committed")
	}
	if n := e.pending(t); n != 0 {
		t.Fatalf("%d rows of a rolled-back batch", n)
	}
	if err := send(false, m1, m2, m1); err != nil {
		t.Fatal(err)
	}
	var ids []string
	rows, err := e.db.Query(ctx, `SELECT event_id FROM outbox ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	if ids, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || ids[0] != "q.1" || ids[1] != "q.2" {
		t.Fatalf("outbox holds %v, want [q.1 q.2]", ids)
	}
}

// Behind a transaction pooler the relay LISTENs on a session of its own
// (ListenOn: DATABASE_SESSION_URL), not on a connection of its pool, and a
// Notify sent through the pool still wakes it.
func TestRunListensOnItsOwnSession(t *testing.T) {
	e := setup(t)
	url := e.db.Config().ConnConfig.ConnString()
	dialed := make(chan struct{}, 8)
	r := NewRelay(e.db, e.bus, quiet).ListenOn(func(ctx context.Context) (*pgx.Conn, error) {
		dialed <- struct{}{}
		return postgres.Connect(ctx, url, "obx", postgres.PoolerNone)
	})
	r.poll = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	notify := Notify(e.db, quiet)
	for i := range 4 {
		e.write(t, context.Background(), fmt.Sprint("s", i), false)
		notify()
		e.received(t, 1)
	}
	if len(dialed) != 1 {
		t.Errorf("the relay opened %d listen connections, want 1", len(dialed))
	}
}

// Without a session (ListenOn(nil)) the relay polls: a Notify wakes
// nothing, the poll publishes.
func TestRunWithoutASessionPolls(t *testing.T) {
	e := setup(t)
	r := NewRelay(e.db, e.bus, quiet).ListenOn(nil)
	r.poll = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	for i := range 3 {
		e.write(t, context.Background(), fmt.Sprint("p", i), false)
		e.received(t, 1)
	}
}

// A wake's claim starts above the floor: the highest seq deleted when the
// full claim before the last began. A row below it that commits late (its
// transaction open for longer than a poll interval) waits for the next
// full claim, which every poll makes; Run relays it within the poll.
func TestWakeClaimsStartAboveTheFloor(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	r := NewRelay(e.db, e.bus, quiet)
	for i := range 3 {
		e.write(t, ctx, fmt.Sprint("early", i), false)
	}
	r.raiseFloor()
	if n, err := r.Flush(ctx); err != nil || n != 3 {
		t.Fatalf("Flush = %d, %v; want 3", n, err)
	}
	e.received(t, 3)
	var highest int64
	if err := e.db.QueryRow(ctx, `SELECT last_value FROM outbox_seq_seq`).Scan(&highest); err != nil {
		t.Fatal(err)
	}
	r.raiseFloor()
	r.raiseFloor()
	if got := r.claimAbove(false); got != highest {
		t.Fatalf("floor %d, want %d (the highest seq deleted two full claims ago)", got, highest)
	}
	// The late row takes a seq below the floor, as a transaction does that
	// wrote its row before the early ones and commits after them.
	late, err := Event(ctx, "note.added", 9, time.Now(), noteAdded{Body: "late"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Exec(ctx, `INSERT INTO outbox (seq, event_id, subject, data) VALUES (1, $1, $2, $3)`,
		late.ID, late.Subject, late.Data); err != nil {
		t.Fatal(err)
	}
	e.write(t, ctx, "next", false)
	if n, err := r.flush(ctx, false); err != nil || n != 1 {
		t.Fatalf("a wake's flush = %d, %v; want 1 (the row above the floor)", n, err)
	}
	if got := e.received(t, 1); got[0].Data.Body != "next" {
		t.Fatalf("a wake's flush published %q", got[0].Data.Body)
	}
	if e.pending(t) != 1 {
		t.Fatalf("%d rows left, want the late one", e.pending(t))
	}
	// Run's first claim and every poll's are full ones.
	r.poll = 50 * time.Millisecond
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	if got := e.received(t, 1); got[0].Data.Body != "late" {
		t.Fatalf("the poll published %q", got[0].Data.Body)
	}
}
