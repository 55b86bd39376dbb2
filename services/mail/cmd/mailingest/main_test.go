// In-process tests of what the end-to-end suite cannot reach: the migrate
// subcommand, refused commands and configuration, shutdown, the README's
// table of variables and the route contract. The API itself is tested
// through the gateway in gateway/e2email.
package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"

	"supportplatform.dev/pkg/apicontract"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/config/configtest"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/postgres/pgtest"
	"supportplatform.dev/pkg/randid"
	"supportplatform.dev/pkg/servicetest"
	"supportplatform.dev/services/mail/internal/httpapi"
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

	if err := run(ctx, []string{"mailingest", "bogus"}, getenv, io.Discard); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("bogus command: %v", err)
	}
	for range 2 { // idempotent
		if err := run(ctx, []string{"mailingest", "migrate"}, getenv, io.Discard); err != nil {
			t.Fatalf("migrate: %v", err)
		}
	}
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'mail' ORDER BY 1`)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := "channel_folders channels outbox retired_subscriptions schema_migrations"
	if got := strings.Join(tables, " "); got != want {
		t.Fatalf("tables %q, want %q", got, want)
	}

	for _, bad := range []map[string]string{
		{},                                     // no PUBLIC_BASE_URL
		{"PUBLIC_BASE_URL": "support.example"}, // not absolute
		{"PUBLIC_BASE_URL": "https://x.example", "MAIL_SUBSCRIPTION_LIFETIME": "10m"},
		{"PUBLIC_BASE_URL": "https://x.example", "GRAPH_CLIENT_ID": "app"}, // no secret
	} {
		for k, v := range bad {
			env[k] = v
		}
		if err := run(ctx, []string{"mailingest"}, getenv, io.Discard); err == nil {
			t.Fatalf("serve with %v succeeded", bad)
		}
		for k := range bad {
			delete(env, k)
		}
	}
}

func TestREADMEDocumentsEveryVariable(t *testing.T) {
	configtest.RequireDocumented(t, "../../../../README.md", Config{})
}

// Every route the service registers is in gateway/openapi.yaml and every
// documented route of its prefixes is served.
func TestContractCoversEveryRoute(t *testing.T) {
	doc, err := apicontract.Load("../../../../gateway/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpserver.New(httpserver.Options{Service: "mailingest", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	pass := func(*gin.Context) {}
	httpapi.New(nil, nil, nil, srv).Routes(srv.Engine, pass, pass)
	served := httpserver.RouteKeys(srv.Engine)
	undocumented, unserved := doc.CompareRoutes(served, "/api/Channels", "/api/ProviderWebhook")
	if len(undocumented) > 0 || len(unserved) > 0 {
		t.Fatalf("served but not in gateway/openapi.yaml: %v; documented but not served: %v", undocumented, unserved)
	}
	if len(served) != 14 {
		t.Errorf("%d routes served", len(served))
	}
}

// SIGTERM while HTTP requests and NATS requests wait on a lock in
// PostgreSQL: every one is answered, and run returns nil with nothing logged
// at error level.
func TestShutdownFinishesInFlightCalls(t *testing.T) {
	servicetest.ShutdownTest(t, servicetest.ShutdownCase{
		Name:     "mailingest",
		Run:      run,
		Options:  servicetest.Options{Env: map[string]string{"PUBLIC_BASE_URL": "https://support.example.com"}},
		HTTPLock: "mail.channel_folders",
		RPCLock:  "mail.channels",
		HTTP: func(svc *servicetest.Service) servicetest.Call {
			return servicetest.Call{Method: "GET", Path: "/api/Channels/1/folders/1",
				Token: svc.Token(t, 77, authn.RoleAgent), Want: 404}
		},
		RPC: func(ctx context.Context, c *servicetest.RPCClient) error {
			return servicetest.Ask[contracts.ChannelRequest, contracts.ChannelReply](ctx, c,
				contracts.RPCChannel, contracts.ChannelRequest{CustomerID: 77, ChannelID: 1})
		},
	})
}
