package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"supportplatform.dev/pkg/postgres"
	"supportplatform.dev/pkg/telemetry"
)

// The row keeps the writing request's trace context and the relay, running
// later under a span of its own, publishes under the writer's: the message
// names the relay's producer span, whose parent is the writer's span.
func TestRelayContinuesTheWritersTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(telemetry.Propagator())
	t.Cleanup(func() { otel.SetTracerProvider(prevTP); otel.SetTextMapPropagator(prevProp) })

	e := setup(t)
	tracer := otel.Tracer("test")
	wctx, writer := tracer.Start(context.Background(), "PUT /api/Topics/:id", trace.WithSpanKind(trace.SpanKindServer))
	m := e.write(t, wctx, "traced", false)
	// A message built by hand (no trace fields) takes ctx's at Add.
	manual := Message{ID: "manual-1", Subject: "events.note.added", Data: m.Data}
	if err := postgres.InTx(wctx, e.db, func(tx pgx.Tx) error { return Add(wctx, tx, manual) }); err != nil {
		t.Fatal(err)
	}
	writer.End()
	// One written outside any trace keeps none.
	plain := e.write(t, context.Background(), "untraced", false)

	rows, err := e.db.Query(context.Background(), `SELECT event_id, traceparent FROM outbox ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]*string{}
	for rows.Next() {
		var id string
		var tp *string
		if err := rows.Scan(&id, &tp); err != nil {
			t.Fatal(err)
		}
		stored[id] = tp
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	wantTP, _ := telemetry.TraceContext(wctx)
	for _, id := range []string{m.ID, manual.ID} {
		if stored[id] == nil || *stored[id] != wantTP {
			t.Errorf("row %s keeps traceparent %v, want the writer's %s", id, stored[id], wantTP)
		}
	}
	if tp, ok := stored[plain.ID]; !ok || tp != nil {
		t.Errorf("an untraced row keeps traceparent %v, want NULL", tp)
	}

	rctx, relaySpan := tracer.Start(context.Background(), "relay poll")
	if n, err := NewRelay(e.db, e.bus, quiet).Flush(rctx); err != nil || n != 3 {
		t.Fatalf("Flush = %d, %v", n, err)
	}
	relaySpan.End()
	headers := map[string]string{}
	batch, err := e.cons.Fetch(3, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for msg := range batch.Messages() {
		_ = msg.Ack()
		headers[msg.Headers().Get("Nats-Msg-Id")] = msg.Headers().Get("traceparent")
	}
	if len(headers) != 3 {
		t.Fatalf("received %v", headers)
	}
	producers := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		if s.SpanKind() == trace.SpanKindProducer {
			for _, a := range s.Attributes() {
				if a.Key == "messaging.message.id" {
					producers[a.Value.AsString()] = s
				}
			}
		}
	}
	for _, id := range []string{m.ID, manual.ID} {
		p := producers[id]
		if p == nil {
			t.Fatalf("no producer span for %s", id)
		}
		if p.SpanContext().TraceID() != writer.SpanContext().TraceID() || p.Parent().SpanID() != writer.SpanContext().SpanID() {
			t.Errorf("producer span of %s has parent %v, want the writer's span %v", id, p.Parent(), writer.SpanContext())
		}
		want := "00-" + writer.SpanContext().TraceID().String() + "-" + p.SpanContext().SpanID().String() + "-01"
		if headers[id] != want {
			t.Errorf("message %s traceparent %q, want %q", id, headers[id], want)
		}
	}
	// The untraced row's publish is in the relay's trace, not the writer's.
	if p := producers[plain.ID]; p == nil || p.SpanContext().TraceID() != relaySpan.SpanContext().TraceID() {
		t.Errorf("untraced row's producer span %v, want the relay's trace", p)
	}
}
