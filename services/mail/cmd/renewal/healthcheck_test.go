package main

import (
	"testing"

	"supportplatform.dev/pkg/servicetest"
)

// The container healthcheck: `renewal healthcheck` (docker-compose.yml).
func TestHealthcheckCommand(t *testing.T) {
	servicetest.HealthcheckTest(t, "renewal", run, nil)
}
