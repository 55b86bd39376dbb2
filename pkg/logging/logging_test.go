package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"supportplatform.dev/pkg/requestid"
)

func TestContextIDs(t *testing.T) {
	var buf bytes.Buffer
	log := New(&buf, "info", "tickets").With("component", "test")
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(requestid.With(context.Background(), "req-1"),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	log.InfoContext(ctx, "with span")
	log.InfoContext(requestid.With(context.Background(), "req-2"), "without span")
	log.Info("no context")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines: %s", len(lines), buf.String())
	}
	var recs [3]map[string]any
	for i, l := range lines {
		if err := json.Unmarshal([]byte(l), &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if recs[0]["traceId"] != tid.String() || recs[0]["spanId"] != sid.String() || recs[0]["requestId"] != "req-1" ||
		recs[0]["service"] != "tickets" {
		t.Errorf("line with a span: %v", recs[0])
	}
	for _, r := range recs[1:] {
		if _, ok := r["traceId"]; ok {
			t.Errorf("a trace id without a span: %v", r)
		}
	}
	if recs[1]["requestId"] != "req-2" {
		t.Errorf("line without a span lost its request id: %v", recs[1])
	}
}
