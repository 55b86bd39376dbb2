package natsbus

import (
	"context"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"supportplatform.dev/pkg/contracts"
	"supportplatform.dev/pkg/requestid"
)

// Trace context crosses NATS in the message headers, as W3C traceparent,
// tracestate and baggage (the global propagator, telemetry.Setup), so that
// a request's trace continues in whichever service consumes its messages:
// publishing starts a producer span, a request a client span, and the
// consumer and the responder start theirs as children of the span that
// the headers name (messaging semantic conventions; messaging.system is
// "nats").

// scope is the instrumentation scope of the bus's spans.
const scope = "supportplatform.dev/pkg/natsbus"

// headerCarrier adapts NATS headers to the propagator. NATS header names
// are case-sensitive: they are written lower case, as W3C spells them, and
// read in any case.
type headerCarrier nats.Header

func (c headerCarrier) Get(key string) string {
	if v := nats.Header(c)[key]; len(v) > 0 {
		return v[0]
	}
	for k, v := range c {
		if strings.EqualFold(k, key) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

func (c headerCarrier) Set(key, value string) { nats.Header(c)[strings.ToLower(key)] = []string{value} }

func (c headerCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

var _ propagation.TextMapCarrier = headerCarrier{}

func tracer() trace.Tracer { return otel.GetTracerProvider().Tracer(scope) }

// destination is a subject's low-cardinality form for span names: the
// deployment's prefix removed and numeric tokens (folder and channel ids)
// replaced by "*" ("mail.import.*").
func destination(names contracts.Names, subject string) string {
	if p := names.Prefix; p != "" {
		subject = strings.TrimPrefix(subject, p+".")
	}
	tokens := strings.Split(subject, ".")
	for i, t := range tokens {
		if t != "" && strings.Trim(t, "0123456789") == "" {
			tokens[i] = "*"
		}
	}
	return strings.Join(tokens, ".")
}

func messagingAttrs(subject, operation string, extra ...attribute.KeyValue) trace.SpanStartOption {
	return trace.WithAttributes(append([]attribute.KeyValue{
		attribute.String("messaging.system", "nats"),
		attribute.String("messaging.destination.name", subject),
		attribute.String("messaging.operation.type", operation),
	}, extra...)...)
}

// startSend starts the span of an outgoing message (a producer span for a
// publish, a client span for a request) and writes its trace context and
// the request id of ctx into msg's headers.
func (b *Bus) startSend(ctx context.Context, msg *nats.Msg, kind trace.SpanKind, msgID string) (context.Context, trace.Span) {
	var extra []attribute.KeyValue
	if msgID != "" {
		extra = append(extra, attribute.String("messaging.message.id", msgID))
	}
	ctx, span := tracer().Start(ctx, "send "+destination(b.Names, msg.Subject), trace.WithSpanKind(kind),
		messagingAttrs(msg.Subject, "send", extra...))
	if msg.Header == nil {
		msg.Header = nats.Header{}
	}
	otel.GetTextMapPropagator().Inject(ctx, headerCarrier(msg.Header))
	setRequestID(ctx, msg)
	return ctx, span
}

// startReceived starts the span of a received message (a consumer span for
// a stream message, a server span for a request) as the child of the span
// its headers name, and carries its request id.
func startReceived(parent context.Context, subject string, h nats.Header, kind trace.SpanKind, name string, extra ...attribute.KeyValue) (context.Context, trace.Span) {
	ctx := parent
	if h != nil {
		ctx = otel.GetTextMapPropagator().Extract(ctx, headerCarrier(h))
		if id := h.Get(requestid.Header); id != "" {
			ctx = requestid.With(ctx, id)
		}
	}
	return tracer().Start(ctx, name, trace.WithSpanKind(kind), messagingAttrs(subject, "process", extra...))
}

// StartConsumerSpan starts the consumer span of a JetStream message of the
// deployment names, for consumers that take messages outside Consume (a
// worker's own pull loop): the child of the span that published it, in ctx
// with the message's request id. The caller ends it once the message is
// settled (EndSpan).
func StartConsumerSpan(ctx context.Context, names contracts.Names, m jetstream.Msg, consumer string) (context.Context, trace.Span) {
	extra := []attribute.KeyValue{attribute.String("messaging.consumer.group.name", consumer)}
	if md, err := m.Metadata(); err == nil {
		extra = append(extra, attribute.Int64("messaging.nats.delivered", int64(md.NumDelivered)),
			attribute.Int64("messaging.nats.stream_sequence", int64(md.Sequence.Stream)))
	}
	return startReceived(ctx, m.Subject(), m.Headers(), trace.SpanKindConsumer, "process "+destination(names, m.Subject()), extra...)
}

// EndSpan records err (nil: success) on span and ends it.
func EndSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
