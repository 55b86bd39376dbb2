// In-process tests of what the end-to-end suite cannot reach: the migrate
// subcommand, refused commands and configuration, and the README's table of
// variables. The API itself is tested through the gateway in gateway/e2e.
package main

import (
	"testing"

	"supportplatform.dev/pkg/config/configtest"
	"supportplatform.dev/pkg/servicetest"
)

func TestMigrateAndCommands(t *testing.T) {
	servicetest.MigrateTest(t, "topics", run, "topics",
		[]string{"actions", "documents", "outbox", "page_topic_mappings", "schema_migrations", "topic_actions", "topic_counts", "topic_documents", "topics"},
		map[string]string{"HTTP_ADDR": "not an address"}, map[string]string{"SHUTDOWN_GRACE": "soon"})
}

func TestREADMEDocumentsEveryVariable(t *testing.T) {
	configtest.RequireDocumented(t, "../../README.md", Config{})
}
