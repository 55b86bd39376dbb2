// Package outbox is the transactional outbox. A service writes the events of a
// change into its own `outbox` table in the same transaction as the change, and
// a Relay publishes them to JetStream afterwards (Nats-Msg-Id = event id, so a
// publish repeated after a crash is dropped by the stream's duplicate window).
// An event is therefore never lost when NATS is down at commit time, and never
// published for a change that rolled back.
//
// Each schema that uses it creates the table in one of its migrations:
//
//	CREATE TABLE outbox (seq bigserial PRIMARY KEY, event_id text NOT NULL UNIQUE,
//	    subject text NOT NULL, data bytea NOT NULL, request_id text NOT NULL DEFAULT '',
//	    created_at timestamptz NOT NULL DEFAULT now(),
//	    traceparent text, tracestate text);
//
// A row keeps the W3C trace context (traceparent, tracestate) of the
// request or message that wrote it, and the relay publishes it under that
// context: the publish span is a child of the writer's span, so the trace
// of a request goes on into the consumers of its events although the
// publish happens later, in another goroutine or another replica.
//
// A writer wakes the relay after each commit that added events, explicitly:
// the relay of its own process with Relay.Wake, or, when the schema's relay
// runs in another binary, with Notify (a NOTIFY the relays LISTEN for). No
// writer's transaction sends a NOTIFY, whose lock PostgreSQL holds across
// the commits of every notifying transaction.
//
// Several replicas may run a Relay on the same table: rows are claimed with
// FOR UPDATE SKIP LOCKED, so each row is published by one of them; the order
// of events is the commit order within one relay, not across replicas.
package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/pkg/requestid"
	"supportplatform.dev/pkg/telemetry"
)

// Message is one row of the outbox.
type Message struct {
	ID        string // the Nats-Msg-Id
	Subject   string // the base subject, without the deployment's prefix
	Data      []byte
	RequestID string
	// TraceParent and TraceState are the writer's trace context; Add
	// takes them from its ctx when they are empty.
	TraceParent, TraceState string
}

// Event builds the message of a domain event in the contracts.Event envelope,
// carrying the request id and the trace context of ctx.
func Event[T any](ctx context.Context, eventType string, customerID int64, at time.Time, data T) (Message, error) {
	id := randid.Hex(16)
	body, err := json.Marshal(contracts.Event[T]{ID: id, Type: eventType, CustomerID: customerID, OccurredAt: at.UTC(), Data: data})
	if err != nil {
		return Message{}, fmt.Errorf("outbox: encode %s: %w", eventType, err)
	}
	tp, ts := telemetry.TraceContext(ctx)
	return Message{ID: id, Subject: contracts.EventSubject(eventType), Data: body, RequestID: requestid.From(ctx),
		TraceParent: tp, TraceState: ts}, nil
}

// Execer is what Add needs: the caller's transaction (pgx.Tx).
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// insertSQL writes one message; an id already waiting is not written twice.
const insertSQL = `INSERT INTO outbox (event_id, subject, data, request_id, traceparent, tracestate)
	VALUES ($1, $2, $3, $4, NULLIF($5, ''), NULLIF($6, ''))
	ON CONFLICT (event_id) DO NOTHING`

// insertArgs are insertSQL's values of m, with the trace context of ctx
// when m has none.
func insertArgs(ctx context.Context, m Message) []any {
	if m.TraceParent == "" {
		m.TraceParent, m.TraceState = telemetry.TraceContext(ctx)
	}
	return []any{m.ID, m.Subject, m.Data, m.RequestID, m.TraceParent, m.TraceState}
}

// Add writes msgs in the caller's transaction. It does not wake a relay:
// after its commit the writer calls its wake (Relay.Wake of the relay in
// its own process, or Notify when the schema's relay runs in another
// binary), so no writer's commit waits on PostgreSQL's notify lock. A
// message whose id is already waiting in the outbox is the same message (a
// deterministic id, such as a coalesced import request's) and is not
// written twice.
func Add(ctx context.Context, tx Execer, msgs ...Message) error {
	for _, m := range msgs {
		if _, err := tx.Exec(ctx, insertSQL, insertArgs(ctx, m)...); err != nil {
			return fmt.Errorf("outbox: add %s: %w", m.Subject, err)
		}
	}
	return nil
}

// Queue is Add for a batch: it queues the writes of msgs in b, which the
// caller sends in its transaction (tx.SendBatch) with its other statements,
// in one round trip. An error of one of them is the batch's.
func Queue(ctx context.Context, b *pgx.Batch, msgs ...Message) {
	for _, m := range msgs {
		b.Queue(insertSQL, insertArgs(ctx, m)...)
	}
}

// Wake is what a writer calls after committing events (Add): the relay of
// its own process (Relay.Wake) or Notify. A nil Wake wakes nothing; the
// events wait for the relay's poll.
type Wake func()

// InTx runs fn in a transaction (postgres.InTx) and, when it commits,
// calls w: the stores run their event-writing transactions through it.
func (w Wake) InTx(ctx context.Context, db *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	if err := postgres.InTx(ctx, db, fn); err != nil {
		return err
	}
	if w != nil {
		w()
	}
	return nil
}

// notifyTimeout bounds Notify's statement: a wake that cannot be sent is
// only a delay (the relay polls).
const notifyTimeout = 2 * time.Second

// Notify returns the wake of a writer whose schema's relay runs in another
// binary (the assistant writes to the tickets outbox, which the tickets
// binary relays): called after a commit, it sends a NOTIFY on the schema's
// channel, in a statement of its own, and the relays LISTENing there flush
// at once. A failed NOTIFY is logged; the rows wait for the next poll.
func Notify(db *pgxpool.Pool, log *slog.Logger) Wake {
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
		defer cancel()
		if _, err := db.Exec(ctx, `SELECT pg_notify('outbox_' || current_schema(), '')`); err != nil {
			log.Warn("outbox: relay not woken; the events wait for its next poll", "error", err.Error())
		}
	}
}

// Publisher publishes one message to JetStream and waits for the stream's
// acknowledgement (natsbus.Bus).
type Publisher interface {
	PublishRaw(ctx context.Context, subject, msgID string, data []byte) error
}

// BatchPublisher is a Publisher that can also send a batch without
// waiting for each acknowledgement (natsbus.Bus): PublishBatch publishes n
// messages (message(i) gives each) and returns how many of the first, in
// order, were acknowledged. The relay uses
// it when its publisher has it.
type BatchPublisher interface {
	PublishBatch(ctx context.Context, n int, message func(i int) (mctx context.Context, subject, msgID string, data []byte)) (int, error)
}

// Relay moves committed rows from the outbox table to JetStream.
type Relay struct {
	db    *pgxpool.Pool
	pub   Publisher
	log   *slog.Logger
	batch int
	// poll is the fallback when a wake is missed (the LISTEN connection
	// is being re-established) or a publish failed.
	poll time.Duration
	wake chan struct{}
	// connect opens the connection the relay LISTENs on; nil: none (a
	// transaction pooler has no sessions), the relay polls.
	connect func(ctx context.Context) (*pgx.Conn, error)

	// The seqs that bound the claims of Run's wakes (see claimAbove).
	mu        sync.Mutex
	floor     int64 // a wake's claim takes the rows above it
	nextFloor int64 // the floor after the next full claim
	highest   int64 // the highest seq this relay published and deleted
}

// NewRelay returns a relay for the outbox table in db's search_path schema.
// It LISTENs on a connection taken out of db; ListenOn changes that.
func NewRelay(db *pgxpool.Pool, pub Publisher, log *slog.Logger) *Relay {
	r := &Relay{db: db, pub: pub, log: log, batch: 100, poll: time.Second, wake: make(chan struct{}, 1)}
	r.connect = func(ctx context.Context) (*pgx.Conn, error) {
		pc, err := r.db.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		// The connection leaves the pool: a LISTEN must not be handed to
		// another user of the pool, and a cancelled wait may leave it
		// unusable.
		return pc.Hijack(), nil
	}
	return r
}

// ListenOn makes the relay LISTEN on connections that connect opens (a
// session of their own, when db goes through a transaction-mode pooler,
// where a LISTEN is lost with the transaction); nil: no LISTEN, the relay
// flushes on Wake and every poll interval only, so a writer of another
// binary (Notify) waits up to a second.
func (r *Relay) ListenOn(connect func(ctx context.Context) (*pgx.Conn, error)) *Relay {
	r.connect = connect
	return r
}

// Wake makes the relay flush now: the writers of its own process call it
// after each commit that added messages (Add). A relay that is flushing
// already flushes once more afterwards, so wakes under load coalesce into
// batches. It never blocks.
func (r *Relay) Wake() { signal(r.wake) }

// Run relays until ctx ends: at once, on every Wake (a writer of this
// process), every notification on the schema's channel (Notify, a writer
// of another binary), and every poll interval. It returns nil when ctx
// ends.
func (r *Relay) Run(ctx context.Context) error {
	wake := r.wake
	listenDone := make(chan struct{})
	go func() {
		defer close(listenDone)
		if r.connect == nil {
			r.log.InfoContext(ctx, "outbox relay: no session to LISTEN on; polling", "interval", r.poll.String())
			return
		}
		r.listen(ctx, wake)
	}()
	defer func() { <-listenDone }()
	t := time.NewTicker(r.poll)
	defer t.Stop()
	full := true
	for {
		if full {
			r.raiseFloor()
		}
		if _, err := r.flush(ctx, full); err != nil && ctx.Err() == nil {
			r.log.WarnContext(ctx, "outbox relay: events stay queued", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
			full = false
		case <-t.C:
			full = true
		}
	}
}

// A wake's claim starts above a floor instead of at the table's first
// key. Every published row is deleted, and until a VACUUM its entry stays
// in outbox_pkey: a claim from the first key steps over all of them, each
// time, and the relay claims after every wake (each commit of a writer of
// its process). Autovacuum comes at most once a minute (autovacuum_naptime),
// or never where it is off (this machine's server). EXPLAIN (ANALYZE,
// BUFFERS) of the claim with 12,000 deleted rows: 41 buffers, 0.065 ms from
// the first key; 14 buffers, 0.022 ms from a floor 2,000 rows back. The
// entries are skipped cheaply only once PostgreSQL has marked them dead,
// which it does when no snapshot can see their rows: while a transaction
// that wrote anything stays open anywhere on the server (another database's
// too, through every snapshot's xmin), each claim visits every deleted row
// again: 705 buffers, 1.5 ms from the first key, 120 buffers, 0.3 ms from
// the floor, growing with every event relayed meanwhile (100,000 deleted
// rows visited: 29 ms a claim).
//
// Rows commit out of seq order (a seq is taken at the INSERT, the row shows
// at the commit), so no floor is exact: claimAbove's floor is the highest
// seq this relay had deleted when the full claim before the last began, a
// poll interval (1 s) or more ago. A row at or below it that a wake's claim
// does not see took its seq before that row was even written and had not
// committed when the last full claim began, a poll interval later: only a
// transaction open for longer than that between its outbox INSERT and its
// COMMIT. Every poll's claim is a full one (Flush), which takes such a row
// then.

// raiseFloor moves the floor of the wakes' claims up at a full claim.
func (r *Relay) raiseFloor() {
	r.mu.Lock()
	r.floor, r.nextFloor = r.nextFloor, r.highest
	r.mu.Unlock()
}

// claimAbove is the seq a claim starts after: 0 for a full claim.
func (r *Relay) claimAbove(full bool) int64 {
	if full {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.floor
}

// deleted records the highest seq of rows this relay deleted.
func (r *Relay) deleted(seq int64) {
	r.mu.Lock()
	r.highest = max(r.highest, seq)
	r.mu.Unlock()
}

// listen holds a dedicated connection LISTENing on the schema's channel and
// signals wake on every notification; it reconnects after errors.
func (r *Relay) listen(ctx context.Context, wake chan<- struct{}) {
	for ctx.Err() == nil {
		err := r.listenOnce(ctx, wake)
		if ctx.Err() != nil {
			return
		}
		r.log.WarnContext(ctx, "outbox relay: listen connection lost; polling until it is back", "error", err.Error())
		select {
		case <-ctx.Done():
		case <-time.After(r.poll):
		}
	}
}

func (r *Relay) listenOnce(ctx context.Context, wake chan<- struct{}) error {
	conn, err := r.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var channel string
	if err := conn.QueryRow(ctx, `SELECT 'outbox_' || current_schema()`).Scan(&channel); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	signal(wake) // rows committed before LISTEN took effect
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		signal(wake)
	}
}

func signal(wake chan<- struct{}) {
	select {
	case wake <- struct{}{}:
	default:
	}
}

// Flush publishes every committed row, oldest first, batch by batch, and
// deletes what was published. It returns how many were published; on a
// publish error the rows from the failed one on stay for the next round.
func (r *Relay) Flush(ctx context.Context) (int, error) {
	return r.flush(ctx, true)
}

// flush is Flush from the first row (full) or from claimAbove's floor.
func (r *Relay) flush(ctx context.Context, full bool) (int, error) {
	above := r.claimAbove(full)
	total := 0
	for {
		n, err := r.flushBatch(ctx, above)
		total += n
		if err != nil || n < r.batch {
			return total, err
		}
	}
}

func (r *Relay) flushBatch(ctx context.Context, above int64) (int, error) {
	tx, err := r.db.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("outbox: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := tx.Query(ctx, `SELECT seq, event_id, subject, data, request_id,
			coalesce(traceparent, ''), coalesce(tracestate, '') FROM outbox
		WHERE seq > $2 ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED`, r.batch, above)
	if err != nil {
		return 0, fmt.Errorf("outbox: claim: %w", err)
	}
	type row struct {
		seq int64
		Message
	}
	claimed, err := pgx.CollectRows(rows, func(rw pgx.CollectableRow) (row, error) {
		var x row
		err := rw.Scan(&x.seq, &x.ID, &x.Subject, &x.Data, &x.RequestID, &x.TraceParent, &x.TraceState)
		return x, err
	})
	if err != nil {
		return 0, fmt.Errorf("outbox: claim: %w", err)
	}
	done, perr := r.publish(ctx, len(claimed), func(i int) (context.Context, Message) {
		// The publish continues the writer's trace, not the relay's.
		m := claimed[i]
		pctx := telemetry.WithTraceContext(ctx, m.TraceParent, m.TraceState)
		if m.RequestID != "" {
			pctx = requestid.With(pctx, m.RequestID)
		}
		return pctx, m.Message
	})
	seqs := make([]int64, done)
	for i := range done {
		seqs[i] = claimed[i].seq
	}
	if done > 0 {
		// The commit does not wait for its WAL to reach the disk
		// (asynchronous commit, this transaction only): a DELETE that a
		// crash loses publishes its rows again, which the stream drops as
		// duplicates, as after a crash before the commit. Every writer's
		// commit waits for the disk and this one need not: with it, each
		// event written cost two WAL flushes, and under load the request
		// path queued behind them (make soak, deploy/README.md).
		b := &pgx.Batch{}
		b.Queue(`SET LOCAL synchronous_commit = off`)
		b.Queue(`DELETE FROM outbox WHERE seq = ANY($1)`, seqs)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return 0, errors.Join(perr, fmt.Errorf("outbox: delete published: %w", err))
		}
		if err := tx.Commit(ctx); err != nil {
			// The rows are published again later; the stream drops them
			// as duplicates inside its window.
			return 0, errors.Join(perr, fmt.Errorf("outbox: commit: %w", err))
		}
		r.deleted(seqs[done-1])
	}
	if perr != nil {
		return done, fmt.Errorf("outbox: publish: %w", perr)
	}
	return done, nil
}

// publish publishes the n claimed messages (message(i) gives each with its
// context) in order and returns how many of the first were acknowledged:
// in one batch when the publisher has PublishBatch, else one at a time,
// stopping at the first failure. The rows from the first failure on stay
// for the next round; a message of theirs that did reach the stream is
// dropped there as a duplicate.
func (r *Relay) publish(ctx context.Context, n int, message func(i int) (context.Context, Message)) (int, error) {
	if bp, ok := r.pub.(BatchPublisher); ok && n > 1 {
		return bp.PublishBatch(ctx, n, func(i int) (context.Context, string, string, []byte) {
			mctx, m := message(i)
			return mctx, m.Subject, m.ID, m.Data
		})
	}
	for i := range n {
		mctx, m := message(i)
		if err := r.pub.PublishRaw(mctx, m.Subject, m.ID, m.Data); err != nil {
			return i, err
		}
	}
	return n, nil
}
