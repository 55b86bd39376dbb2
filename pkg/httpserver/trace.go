package httpserver

import (
	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"supportplatform.dev/pkg/telemetry"
)

// traced starts the request's server span (a child of the caller's trace
// context: Traefik's span behind the gateway), named by the route as
// registered ("GET /api/Topics/:id"). It comes first in the chain so that
// the access log and every problem carry its trace id. Probes and scrapes
// are not traced. When no span can be recorded (telemetry.Recording), the
// caller's trace context is only carried on (propagated).
func traced(service string) gin.HandlerFunc {
	if !telemetry.Recording() {
		return propagated
	}
	return otelgin.Middleware(service, otelgin.WithGinFilter(func(c *gin.Context) bool {
		switch c.FullPath() {
		case "/healthz", "/readyz", "/metrics":
			return false
		}
		return true
	}))
}

// propagated puts the caller's trace context (W3C traceparent) into the
// request's context without starting a span: logs, problems, NATS messages
// and outgoing calls carry the caller's trace id, at the cost of parsing a
// header.
func propagated(c *gin.Context) {
	// Without a traceparent header there is no span context to carry on
	// (boot's propagator is W3C trace context + baggage, and baggage alone
	// is not kept): the extraction, which canonicalises each header name
	// it looks up into a new string, is skipped. net/http stores request
	// header names canonical.
	if len(c.Request.Header["Traceparent"]) == 0 {
		c.Next()
		return
	}
	ctx := otel.GetTextMapPropagator().Extract(c.Request.Context(), propagation.HeaderCarrier(c.Request.Header))
	if trace.SpanContextFromContext(ctx).IsValid() {
		c.Request = c.Request.WithContext(ctx)
	}
	c.Next()
}
