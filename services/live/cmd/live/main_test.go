package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"supportplatform.dev/pkg/apicontract"
	"supportplatform.dev/pkg/config/configtest"
	"supportplatform.dev/pkg/httpserver"
	"supportplatform.dev/pkg/servicetest"
	"supportplatform.dev/services/live/internal/httpapi"
)

func TestREADMEDocumentsEveryVariable(t *testing.T) {
	configtest.RequireDocumented(t, "../../README.md", Config{})
}

func TestEveryRouteIsDocumented(t *testing.T) {
	c, err := apicontract.Load("../../../../gateway/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpserver.New(httpserver.Options{Service: "live", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	httpapi.New(srv, nil, nil, nil, nil, nil, nil).Routes(srv.Engine, func(*gin.Context) {})
	served := httpserver.RouteKeys(srv.Engine)
	undocumented, unserved := c.CompareRoutes(served, "/api/live")
	if len(undocumented) > 0 || len(unserved) > 0 {
		t.Fatalf("served but not in gateway/openapi.yaml: %v; documented but not served: %v", undocumented, unserved)
	}
	if len(served) != 2 {
		t.Errorf("%d routes served, want 2", len(served))
	}
}

// The container healthcheck: `live healthcheck` (docker-compose.yml).
func TestHealthcheckCommand(t *testing.T) {
	servicetest.HealthcheckTest(t, "live", run, nil)
}

func TestSubcommandsAndSettings(t *testing.T) {
	var out bytes.Buffer
	none := func(string) string { return "" }
	if err := run(context.Background(), []string{"live", "migrate"}, none, &out); err != nil || !strings.Contains(out.String(), "nothing to migrate") {
		t.Errorf("live migrate = %v, %q", err, out.String())
	}
	for name, env := range map[string]map[string]string{
		"LIVE_BUFFER":     {"LIVE_BUFFER": "0"},
		"LIVE_TICKET_TTL": {"LIVE_TICKET_TTL": "1h"},
		"LIVE_HEARTBEAT":  {"LIVE_HEARTBEAT": "2m"},
	} {
		err := run(context.Background(), []string{"live"}, func(k string) string { return env[k] }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%v: %v, want a refusal naming %s", env, err, name)
		}
	}
}

// The service starts against real NATS and Redis, follows EVENTS with its
// consumers and answers a stream with a bearer token.
func TestServes(t *testing.T) {
	svc := servicetest.Start(t, "live", run, servicetest.Options{NoDatabase: true})
	tok := svc.Token(t, 5, "agent")
	req, err := http.NewRequest("POST", svc.URL+"/api/live/tickets", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct{ Ticket string }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 201 {
		t.Fatalf("ticket: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	resp, err = http.Get(svc.URL + "/api/live/events?ticket=" + body.Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	if resp.StatusCode != 200 || err != nil || line != "retry: 2000\n" {
		t.Fatalf("stream: %d %q %v", resp.StatusCode, line, err)
	}
	// A shutdown ends the open stream (the console reconnects to another
	// replica) instead of waiting for it.
	if err := svc.Stop(); err != nil {
		t.Fatalf("stop with a stream open: %v", err)
	}
	rest, _ := io.ReadAll(r)
	if !strings.Contains(string(rest), "event: reconnect\n") {
		t.Fatalf("the stream ended with %q", rest)
	}
}
