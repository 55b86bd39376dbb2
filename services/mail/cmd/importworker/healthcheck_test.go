package main

import (
	"testing"

	"supportplatform.dev/pkg/servicetest"
)

// The container healthcheck: `importworker healthcheck` (docker-compose.yml).
func TestHealthcheckCommand(t *testing.T) {
	servicetest.HealthcheckTest(t, "importworker", run, nil)
}
