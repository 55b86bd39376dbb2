package natsbus_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/natsbus"
	"supportplatform.dev/pkg/natstest"
	"supportplatform.dev/pkg/requestid"
	"supportplatform.dev/pkg/telemetry"
)

// recordSpans installs a recording global TracerProvider (as
// telemetry.Setup installs the exporting one) until t ends.
func recordSpans(t *testing.T) *tracetest.SpanRecorder {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(telemetry.Propagator())
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		otel.SetTracerProvider(prevTP)
		otel.SetTextMapPropagator(prevProp)
	})
	return rec
}

func spanNamed(t *testing.T, rec *tracetest.SpanRecorder, kind trace.SpanKind, prefix string) sdktrace.ReadOnlySpan {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, s := range rec.Ended() {
			if s.SpanKind() == kind && strings.HasPrefix(s.Name(), prefix) {
				return s
			}
		}
		if time.Now().After(deadline) {
			var names []string
			for _, s := range rec.Ended() {
				names = append(names, s.SpanKind().String()+" "+s.Name())
			}
			t.Fatalf("no ended %s span %q among %v", kind, prefix, names)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

type handled struct {
	span      trace.SpanContext
	requestID string
	headers   map[string]string
}

// A publish carries the publishing request's trace context in its headers;
// the consumer's span is the child of the producer span, which is the
// child of the request's span: one trace.
func TestTraceContextCrossesJetStream(t *testing.T) {
	rec := recordSpans(t)
	url := natstest.Start(t)
	b := bus(t, url, "tr")
	ctx := context.Background()
	if err := b.EnsureEventsStream(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan handled, 1)
	cc, err := natsbus.Consume(ctx, b, b.Names.Stream(contracts.StreamEvents), jetstream.ConsumerConfig{Durable: "tracer"},
		func(ctx context.Context, _ contracts.Event[payload], m jetstream.Msg) error {
			got <- handled{span: trace.SpanContextFromContext(ctx), requestID: requestid.From(ctx),
				headers: map[string]string{"traceparent": m.Headers().Get("traceparent"), "X-Request-ID": m.Headers().Get(requestid.Header)}}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()

	reqCtx, reqSpan := otel.Tracer("test").Start(requestid.With(ctx, "rid-7"), "POST /api/Topics", trace.WithSpanKind(trace.SpanKindServer))
	if err := b.PublishRaw(reqCtx, contracts.EventSubject(contracts.EventTopicCreated), "m-1", []byte(`{"data":{"Name":"a"}}`)); err != nil {
		t.Fatal(err)
	}
	reqSpan.End()
	var h handled
	select {
	case h = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("message not consumed")
	}

	producer := spanNamed(t, rec, trace.SpanKindProducer, "send events.topic.created")
	consumer := spanNamed(t, rec, trace.SpanKindConsumer, "process events.topic.created")
	traceID := reqSpan.SpanContext().TraceID()
	if producer.SpanContext().TraceID() != traceID || producer.Parent().SpanID() != reqSpan.SpanContext().SpanID() {
		t.Errorf("producer span %v is not the request span's child", producer.Parent())
	}
	if consumer.SpanContext().TraceID() != traceID || consumer.Parent().SpanID() != producer.SpanContext().SpanID() ||
		!consumer.Parent().IsRemote() {
		t.Errorf("consumer span's parent %v, want the remote producer span %v", consumer.Parent(), producer.SpanContext())
	}
	if h.span.SpanID() != consumer.SpanContext().SpanID() || h.requestID != "rid-7" {
		t.Errorf("handler context: span %v request id %q", h.span, h.requestID)
	}
	want := "00-" + traceID.String() + "-" + producer.SpanContext().SpanID().String() + "-01"
	if h.headers["traceparent"] != want || h.headers["X-Request-ID"] != "rid-7" {
		t.Errorf("headers %v, want traceparent %s", h.headers, want)
	}
	if attr(producer, "messaging.system") != "nats" || attr(producer, "messaging.destination.name") != "tr.events.topic.created" ||
		attr(producer, "messaging.message.id") != "m-1" || attr(consumer, "messaging.consumer.group.name") != "tracer" {
		t.Errorf("messaging attributes: producer %v consumer %v", producer.Attributes(), consumer.Attributes())
	}
}

// A request's client span is the parent of the responder's server span; an
// internal failure marks the server span as failed.
func TestTraceContextCrossesRequestReply(t *testing.T) {
	rec := recordSpans(t)
	url := natstest.Start(t)
	srv, cli := bus(t, url, "rr"), bus(t, url, "rr")
	seen := make(chan trace.SpanContext, 2)
	if _, err := natsbus.Serve(srv, "rpc.channel.42", "q", func(ctx context.Context, r echoReq) (echoResp, error) {
		seen <- trace.SpanContextFromContext(ctx)
		if r.N < 0 {
			return echoResp{}, errors.New("boom")
		}
		return echoResp{Double: 2 * r.N}, nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, root := otel.Tracer("test").Start(context.Background(), "GET /api/Tickets/:id", trace.WithSpanKind(trace.SpanKindServer))
	if _, err := natsbus.Request[echoReq, echoResp](ctx, cli, "rpc.channel.42", echoReq{N: 1}); err != nil {
		t.Fatal(err)
	}
	root.End()
	client := spanNamed(t, rec, trace.SpanKindClient, "send rpc.channel.*")
	server := spanNamed(t, rec, trace.SpanKindServer, "rpc.channel.*")
	if client.Parent().SpanID() != root.SpanContext().SpanID() {
		t.Errorf("client span's parent %v, want the request span", client.Parent())
	}
	if server.Parent().SpanID() != client.SpanContext().SpanID() || server.SpanContext().TraceID() != root.SpanContext().TraceID() {
		t.Errorf("server span's parent %v, want the client span %v", server.Parent(), client.SpanContext())
	}
	if sc := <-seen; sc.SpanID() != server.SpanContext().SpanID() {
		t.Errorf("handler runs in span %v, want the server span", sc)
	}

	rec.Reset()
	if _, err := natsbus.Request[echoReq, echoResp](context.Background(), cli, "rpc.channel.42", echoReq{N: -1}); err == nil {
		t.Fatal("want the internal error")
	}
	<-seen
	failed := spanNamed(t, rec, trace.SpanKindServer, "rpc.channel.*")
	if failed.Status().Code.String() != "Error" || attr(failed, "error.type") != "internal" {
		t.Errorf("failed server span: status %v attributes %v", failed.Status(), failed.Attributes())
	}
}

// A worker's own pull loop continues the trace with StartConsumerSpan.
func TestStartConsumerSpan(t *testing.T) {
	rec := recordSpans(t)
	url := natstest.Start(t)
	b := bus(t, url, "pl")
	ctx := context.Background()
	if err := b.EnsureEventsStream(ctx); err != nil {
		t.Fatal(err)
	}
	cons, err := b.JS.CreateOrUpdateConsumer(ctx, b.Names.Stream(contracts.StreamEvents), jetstream.ConsumerConfig{Durable: "puller"})
	if err != nil {
		t.Fatal(err)
	}
	pctx, parent := otel.Tracer("test").Start(ctx, "webhook", trace.WithSpanKind(trace.SpanKindServer))
	if err := b.PublishRaw(pctx, "events.mail.import.1234", "x-1", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	parent.End()
	m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	hctx, span := natsbus.StartConsumerSpan(ctx, b.Names, m, "puller")
	if trace.SpanContextFromContext(hctx).TraceID() != parent.SpanContext().TraceID() {
		t.Error("the pulled message's span is not in the publisher's trace")
	}
	natsbus.EndSpan(span, errors.New("import failed"))
	got := spanNamed(t, rec, trace.SpanKindConsumer, "process events.mail.import.*")
	if got.Status().Code.String() != "Error" || attr(got, "messaging.nats.delivered") != "1" {
		t.Errorf("consumer span: status %v attributes %v", got.Status(), got.Attributes())
	}
}

// With nothing exported (a no-op provider), a message still carries the
// trace context the request came with, so the trace is not cut where a
// service does not export.
func TestTraceContextPropagatesWithoutExporting(t *testing.T) {
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(noop.NewTracerProvider())
	otel.SetTextMapPropagator(telemetry.Propagator())
	t.Cleanup(func() { otel.SetTracerProvider(prevTP); otel.SetTextMapPropagator(prevProp) })
	url := natstest.Start(t)
	b := bus(t, url, "np")
	ctx := context.Background()
	if err := b.EnsureEventsStream(ctx); err != nil {
		t.Fatal(err)
	}
	cons, err := b.JS.CreateOrUpdateConsumer(ctx, b.Names.Stream(contracts.StreamEvents), jetstream.ConsumerConfig{Durable: "r"})
	if err != nil {
		t.Fatal(err)
	}
	const incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	rctx := telemetry.WithTraceContext(ctx, incoming, "")
	if err := b.PublishRaw(rctx, "events.x", "n-1", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Headers().Get("traceparent"); got != incoming {
		t.Fatalf("traceparent %q, want the incoming %q", got, incoming)
	}
}
