package main

import (
	"testing"

	"supportplatform.dev/pkg/servicetest"
)

// The container healthcheck: `importreply healthcheck` (docker-compose.yml).
func TestHealthcheckCommand(t *testing.T) {
	servicetest.HealthcheckTest(t, "importreply", run, nil)
}
