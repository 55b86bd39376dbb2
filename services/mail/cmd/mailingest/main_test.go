// In-process tests of what the end-to-end suite cannot reach: the migrate
// subcommand, refused commands and configuration, shutdown, the README's
// table of variables and the route contract. The API itself is tested
// through the gateway in gateway/e2email.
package main

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apicontract"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/config/configtest"
	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/servicetest"
	"supportplatform.dev/services/mail/internal/httpapi"
)

func TestMigrateAndCommands(t *testing.T) {
	servicetest.MigrateTest(t, "mailingest", run, "mail",
		[]string{"channel_folders", "channel_suspensions", "channels", "mailbox_users", "outbox", "provider_connection_states", "provider_connections", "retired_subscriptions", "schema_migrations", "sent_replies"},
		map[string]string{}, // no PUBLIC_BASE_URL
		map[string]string{"PUBLIC_BASE_URL": "support.example"},                                               // not absolute
		map[string]string{"PUBLIC_BASE_URL": "http://support.example"},                                        // not HTTPS
		map[string]string{"PUBLIC_BASE_URL": "https://x.example", "GRAPH_SUBSCRIPTION_CREATE_TIMEOUT": "60s"}, // not below REQUEST_TIMEOUT
		map[string]string{"PUBLIC_BASE_URL": "https://x.example", "MAIL_SUBSCRIPTION_LIFETIME": "10m"},
		map[string]string{"PUBLIC_BASE_URL": "https://x.example", "GRAPH_CLIENT_ID": "app"}, // no secret
		map[string]string{"PUBLIC_BASE_URL": "https://x.example", "SHUTDOWN_GRACE": "soon"})
}

func TestREADMEDocumentsEveryVariable(t *testing.T) {
	configtest.RequireDocumented(t, "../../README.md", Config{})
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
	httpapi.New(nil, nil, nil, nil, srv).Routes(srv.Engine, pass, pass)
	served := httpserver.RouteKeys(srv.Engine)
	undocumented, unserved := doc.CompareRoutes(served, "/api/Channels", "/api/ProviderWebhook", "/api/ProviderConnections")
	if len(undocumented) > 0 || len(unserved) > 0 {
		t.Fatalf("served but not in gateway/openapi.yaml: %v; documented but not served: %v", undocumented, unserved)
	}
	if len(served) != 19 {
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
