// In-process tests of what the end-to-end suite cannot reach: the migrate
// subcommand, refused commands and configuration, shutdown, the README's
// table of variables and the route contract. The API itself is tested
// through the gateway in gateway/e2etickets.
package main

import (
	"io"
	"log/slog"
	"testing"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apicontract"
	"supportplatform.dev/pkg/authn"
	"supportplatform.dev/pkg/config/configtest"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/servicetest"
	"supportplatform.dev/services/tickets/internal/httpapi"
)

func TestMigrateAndCommands(t *testing.T) {
	servicetest.MigrateTest(t, "tickets", run, "tickets",
		[]string{"attachment_usage", "attachments", "blob_garbage", "end_users", "feedback_comments", "message_topics", "message_votes", "outbox",
			"schema_migrations", "ticket_activity", "ticket_counts", "ticket_filter_counts", "ticket_messages", "ticket_summaries", "tickets", "topic_names"},
		map[string]string{"SHUTDOWN_GRACE": "soon", "TICKET_REF_SECRET": refSecret},
		map[string]string{"REQUEST_TIMEOUT": "a minute", "TICKET_REF_SECRET": refSecret},
		// Serving needs the references' secret, of at least 32 bytes.
		map[string]string{},
		map[string]string{"TICKET_REF_SECRET": "too-short"},
		map[string]string{"TICKET_REF_SECRET": refSecret, "ATTACHMENT_QUOTA_BYTES": "0"},
		map[string]string{"TICKET_REF_SECRET": refSecret, "TICKET_REF_SECRET_PREVIOUS": "too-short"})
}

// refSecret is a secret for ticket references (TICKET_REF_SECRET).
const refSecret = "test-ticket-ref-secret-0123456789abcdef"

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
	srv, err := httpserver.New(httpserver.Options{Service: "tickets", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	pass := func(*gin.Context) {}
	httpapi.New(httpapi.Deps{}, srv).Routes(srv.Engine, pass, pass)
	served := httpserver.RouteKeys(srv.Engine)
	undocumented, unserved := doc.CompareRoutes(served, "/api/EndUsers", "/api/Tickets", "/api/TicketMessages", "/api/Assistant")
	if len(undocumented) > 0 || len(unserved) > 0 {
		t.Fatalf("served but not in gateway/openapi.yaml: %v; documented but not served: %v", undocumented, unserved)
	}
	if len(served) < 5 {
		t.Errorf("%d routes served", len(served))
	}
}

// SIGTERM while HTTP requests wait on a lock in PostgreSQL: every one is
// answered, and run returns nil with nothing logged at error level.
func TestShutdownFinishesInFlightCalls(t *testing.T) {
	servicetest.ShutdownTest(t, servicetest.ShutdownCase{
		Name:     "tickets",
		Run:      run,
		Options:  servicetest.Options{Env: map[string]string{"TICKET_REF_SECRET": refSecret}},
		HTTPLock: "tickets.end_users",
		HTTP: func(svc *servicetest.Service) servicetest.Call {
			return servicetest.Call{Method: "POST", Path: "/api/EndUsers", Body: `{"name":"In flight"}`,
				Token: svc.Token(t, 77, authn.RoleAgent), Want: 201}
		},
	})
}
