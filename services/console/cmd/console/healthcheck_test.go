package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"supportplatform.dev/pkg/servicetest"
)

// The container healthcheck: `console healthcheck` (docker-compose.yml, the
// Kubernetes probes use /readyz directly).
func TestHealthcheckCommand(t *testing.T) {
	servicetest.HealthcheckTest(t, "console", run, nil)
}

// The other subcommands: migrate is a no-op (no schema), anything unknown
// is refused before the server starts.
func TestSubcommands(t *testing.T) {
	env := func(string) string { return "" }
	var out bytes.Buffer
	if err := run(context.Background(), []string{"console", "migrate"}, env, &out); err != nil || !strings.Contains(out.String(), "nothing to migrate") {
		t.Errorf("console migrate = %v, %q", err, out.String())
	}
	if err := run(context.Background(), []string{"console", "serv"}, env, &out); err == nil || !strings.Contains(err.Error(), `unknown command "serv"`) {
		t.Errorf("console serv = %v, want unknown command", err)
	}
}
