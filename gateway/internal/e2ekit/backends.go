package e2ekit

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"supportplatform.dev/deploy/stack"
	"supportplatform.dev/pkg/contracts"
)

// Backends are what tests look at behind the API: the stack's database as
// its administrator (to put a record in a state the API cannot) and its
// JetStream as the NATS harness user (to read what services published).
type Backends struct {
	DB    *pgxpool.Pool
	JS    jetstream.JetStream
	Names contracts.Names
	nc    *nats.Conn
}

// OpenBackends connects to stk's database and NATS.
func OpenBackends(ctx context.Context, stk *stack.Stack) (*Backends, error) {
	db, err := pgxpool.New(ctx, stk.DatabaseURL)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(stk.NATSURL, nats.CustomInboxPrefix(contracts.InboxPrefix(contracts.HarnessUser)))
	if err != nil {
		db.Close()
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		db.Close()
		return nil, err
	}
	return &Backends{DB: db, JS: js, Names: contracts.Names{Prefix: stk.NATSPrefix}, nc: nc}, nil
}

// Close disconnects.
func (b *Backends) Close() {
	b.nc.Close()
	b.DB.Close()
}

// Exec runs SQL as the database administrator.
func (b *Backends) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	if _, err := b.DB.Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// Messages returns the data of every message on a base subject of a base
// stream, oldest first (none when the stream does not exist yet).
func (b *Backends) Messages(t testing.TB, stream, subject string) [][]byte {
	t.Helper()
	st, err := b.JS.Stream(t.Context(), b.Names.Stream(stream))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for seq := uint64(1); ; {
		m, err := st.GetMsg(t.Context(), seq, jetstream.WithGetMsgSubject(b.Names.Subject(subject)))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return out
		}
		if err != nil {
			t.Fatalf("%s after %d: %v", subject, seq, err)
		}
		out = append(out, m.Data)
		seq = m.Sequence + 1
	}
}

// Events returns the data of the customer's events of a type on EVENTS
// that match, oldest first.
func Events[T any](t testing.TB, b *Backends, typ string, customerID int64, match func(T) bool) []T {
	t.Helper()
	var out []T
	for _, data := range b.Messages(t, contracts.StreamEvents, contracts.EventSubject(typ)) {
		var ev contracts.Event[T]
		if json.Unmarshal(data, &ev) == nil && ev.CustomerID == customerID && match(ev.Data) {
			out = append(out, ev.Data)
		}
	}
	return out
}
