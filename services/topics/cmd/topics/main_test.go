// In-process tests of what the end-to-end suite cannot reach: the migrate
// subcommand, refused commands and configuration, and the README's table of
// variables. The API itself is tested through the gateway in gateway/e2e.
package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/config/configtest"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/pkg/randid"
)

func TestMigrateAndCommands(t *testing.T) {
	db := pgtest.NewDatabase(t)
	redisURL := os.Getenv("TEST_REDIS_URL")
	if redisURL == "" {
		redisURL = "redis://127.0.0.1:6379/0"
	}
	env := map[string]string{"DATABASE_URL": db, "NATS_URL": natstest.Start(t), "REDIS_URL": redisURL,
		"NATS_PREFIX": "migratetest" + randid.Hex(4), "LOG_LEVEL": "warn"}
	getenv := func(k string) string { return env[k] }
	ctx := context.Background()

	if err := run(ctx, []string{"topics", "bogus"}, getenv, io.Discard); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("bogus command: %v", err)
	}
	for range 2 { // idempotent
		if err := run(ctx, []string{"topics", "migrate"}, getenv, io.Discard); err != nil {
			t.Fatalf("migrate: %v", err)
		}
	}
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var tables []string
	rows, _ := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'topics' ORDER BY 1`)
	tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := "actions documents outbox page_topic_mappings schema_migrations topic_actions topic_documents topics"
	if got := strings.Join(tables, " "); got != want {
		t.Fatalf("tables %q, want %q", got, want)
	}

	env["HTTP_ADDR"] = "not an address"
	if err := run(ctx, []string{"topics"}, getenv, io.Discard); err == nil {
		t.Fatal("serve on a bad address succeeded")
	}
	env["SHUTDOWN_GRACE"] = "soon"
	if err := run(ctx, []string{"topics"}, getenv, io.Discard); err == nil || !strings.Contains(err.Error(), "SHUTDOWN_GRACE") {
		t.Fatalf("bad config: %v", err)
	}
}

func TestREADMEDocumentsEveryVariable(t *testing.T) {
	configtest.RequireDocumented(t, "../../../../README.md", Config{})
}
