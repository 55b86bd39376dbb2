package httpserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"supportplatform.dev/pkg/apperr"
	"supportplatform.dev/pkg/logging"
	"supportplatform.dev/pkg/telemetry"
)

func installTracing(t *testing.T, tp trace.TracerProvider) {
	t.Helper()
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(telemetry.Propagator())
	t.Cleanup(func() { otel.SetTracerProvider(prevTP); otel.SetTextMapPropagator(prevProp) })
}

const (
	gatewayTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	gatewaySpan  = "00f067aa0ba902b7"
)

// A request from the gateway (traceparent) is served under a server span,
// named by its route, that is the child of the gateway's span; its problem
// body and its log lines carry the trace id.
func TestRequestSpanProblemAndLogShareTheTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	installTracing(t, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	var logs bytes.Buffer
	s, err := New(Options{Service: "items", Logger: logging.New(&logs, "info", "items")})
	if err != nil {
		t.Fatal(err)
	}
	s.Engine.GET("/api/Items/:id", s.Handle(func(*gin.Context) error { return apperr.E(apperr.NotFound, "item not found") }))

	req := httptest.NewRequest(http.MethodGet, "/api/items/7", nil)
	req.Header.Set("traceparent", "00-"+gatewayTrace+"-"+gatewaySpan+"-01")
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, req)
	var p Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || w.Code != http.StatusNotFound {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	if p.TraceID != gatewayTrace || p.RequestID == "" {
		t.Errorf("problem traceId %q (requestId %q), want %s", p.TraceID, p.RequestID, gatewayTrace)
	}
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want the request's", len(spans))
	}
	sp := spans[0]
	if sp.Name() != "GET /api/Items/:id" || sp.SpanKind() != trace.SpanKindServer ||
		sp.Parent().SpanID().String() != gatewaySpan || sp.SpanContext().TraceID().String() != gatewayTrace {
		t.Errorf("span %q kind %v parent %v trace %v", sp.Name(), sp.SpanKind(), sp.Parent().SpanID(), sp.SpanContext().TraceID())
	}
	var access map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "http request" {
			access = rec
		}
	}
	if access["traceId"] != gatewayTrace || access["spanId"] != sp.SpanContext().SpanID().String() {
		t.Errorf("access log line %v lacks the request's trace and span ids", access)
	}

	// Probes and scrapes make no spans.
	rec.Reset()
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		s.Handler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
	}
	if n := len(rec.Ended()); n != 0 {
		t.Errorf("probes made %d spans", n)
	}
}

// Without tracing and without a caller's trace context, the problem has no
// traceId member; with only the caller's (no exporting), it has the
// caller's.
func TestProblemTraceIDWithoutExporting(t *testing.T) {
	installTracing(t, noop.NewTracerProvider())
	s := newTestServer(t)
	w, _ := do(t, s.Handler(), http.MethodGet, "/api/Items/missing", "", "")
	if strings.Contains(w.Body.String(), "traceId") {
		t.Errorf("a traceId without any trace: %s", w.Body)
	}
	req := httptest.NewRequest(http.MethodGet, "/api/Items/missing", nil)
	req.Header.Set("traceparent", "00-"+gatewayTrace+"-"+gatewaySpan+"-01")
	w = httptest.NewRecorder()
	s.Handler().ServeHTTP(w, req)
	var p Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if p.TraceID != gatewayTrace {
		t.Errorf("traceId %q, want the caller's %s", p.TraceID, gatewayTrace)
	}
}
