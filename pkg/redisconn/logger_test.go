package redisconn

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
)

// go-redis's own messages come out as JSON warnings of the service's
// logger, not as plain text on stderr.
func TestGoRedisMessagesAreJSON(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	Logger{Log: log}.Printf(context.Background(), "redis: dial %s: %v", "127.0.0.1:1", "connection refused")
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("not one JSON record: %q", buf.String())
	}
	if rec["level"] != "WARN" || rec["msg"] != "go-redis" || rec["detail"] != "redis: dial 127.0.0.1:1: connection refused" {
		t.Errorf("record %v", rec)
	}
}
