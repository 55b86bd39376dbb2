package main

import (
	"testing"

	"supportplatform.dev/pkg/servicetest"
)

// The container healthcheck: `tickets healthcheck` (docker-compose.yml).
func TestHealthcheckCommand(t *testing.T) {
	servicetest.HealthcheckTest(t, "tickets", run, nil)
}
