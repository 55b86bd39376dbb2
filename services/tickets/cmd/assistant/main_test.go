// In-process tests of the binary: its commands, refused configuration,
// the README's table of variables, and that it serves and consumes with
// its defaults. The work itself is tested in internal/assistant/worker
// and through the gateway.
package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"supportplatform.dev/pkg/config/configtest"
	"supportplatform.dev/pkg/servicetest"
)

func TestMigrateAndCommands(t *testing.T) {
	servicetest.MigrateTest(t, "assistant", run, "tickets",
		[]string{"attachment_usage", "attachments", "blob_garbage", "end_users", "feedback_comments", "message_topics", "message_votes", "outbox",
			"schema_migrations", "ticket_activity", "ticket_counts", "ticket_filter_counts", "ticket_messages", "ticket_summaries", "tickets", "topic_names"},
		map[string]string{"ASSISTANT_CONCURRENCY": "0"},
		map[string]string{"AI_TIMEOUT": "2m"},
		map[string]string{"AI_MAX_RETRIES": "-1"})
}

func TestREADMEDocumentsEveryVariable(t *testing.T) {
	configtest.RequireDocumented(t, "../../README.md", Config{})
}

// It starts, is ready and exports its metrics, then stops on the signal.
func TestServesHealthAndMetrics(t *testing.T) {
	s := servicetest.Start(t, "assistant", run, servicetest.Options{})
	resp, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `assistant_work_total{kind="reply",outcome="prepared"} 0`) {
		t.Fatalf("/metrics: %d %v\n%s", resp.StatusCode, err, body)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
}
