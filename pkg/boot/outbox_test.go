package boot

import (
	"context"
	"io"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/config"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/postgres/pgtest"
)

// A binary that relays its schema's outbox wakes its own relay (no
// NOTIFY); a binary that writes to a schema another binary relays (the
// assistant) wakes that relay with a NOTIFY on the schema's channel.
func TestOutboxWake(t *testing.T) {
	dbURL, natsURL := pgtest.NewDatabase(t), natstest.Start(t)
	migrations := fstest.MapFS{"001_init.sql": {Data: []byte("CREATE TABLE t (id int);")}}
	open := func(service string, relays bool) *Deps {
		t.Helper()
		env := map[string]string{"DATABASE_URL": dbURL, "NATS_URL": natsURL}
		var cfg config.Common
		if err := config.Load(func(k string) string { return env[k] }, &cfg); err != nil {
			t.Fatal(err)
		}
		d, err := Open(context.Background(), cfg, Options{Service: service, Schema: "wake", Migrations: migrations, Outbox: relays}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		if d.OutboxWake == nil {
			t.Fatalf("%s: no outbox wake", service)
		}
		return d
	}
	relaying, writing := open("relaying", true), open("writing", false)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `LISTEN outbox_wake`); err != nil {
		t.Fatal(err)
	}
	// Notifications arrive in order: the marker sent after each wake
	// comes first unless the wake notified.
	marker := func() {
		t.Helper()
		if _, err := writing.DB.Exec(ctx, `SELECT pg_notify('outbox_wake', 'marker')`); err != nil {
			t.Fatal(err)
		}
	}
	next := func() string {
		t.Helper()
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n.Payload
	}
	relaying.OutboxWake()
	marker()
	if p := next(); p != "marker" {
		t.Fatalf("the relaying binary's wake sent a NOTIFY (%q)", p)
	}
	writing.OutboxWake()
	marker()
	if p := next(); p != "" {
		t.Fatalf("first notification after the writing binary's wake %q, want its NOTIFY", p)
	}
	if p := next(); p != "marker" {
		t.Fatalf("then %q, want the marker", p)
	}
}
