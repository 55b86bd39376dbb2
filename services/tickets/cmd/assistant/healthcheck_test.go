package main

import (
	"testing"

	"supportplatform.dev/pkg/servicetest"
)

// The container healthcheck: `assistant healthcheck` (docker-compose.yml).
func TestHealthcheckCommand(t *testing.T) {
	servicetest.HealthcheckTest(t, "assistant", run, nil)
}
