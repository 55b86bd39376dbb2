package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"supportplatform.dev/pkg/telemetry/otlptest"
)

// defaults is Config as pkg/config fills it from an empty environment.
var defaults = Config{Protocol: ProtocolHTTP, Sampler: "parentbased_always_on"}

func TestParse(t *testing.T) {
	cases := []struct {
		name     string
		cfg      func(*Config)
		endpoint string
		service  string
		err      string
	}{
		{name: "off by default", cfg: func(*Config) {}, service: "tickets"},
		{name: "base endpoint gets the traces path", cfg: func(c *Config) { c.Endpoint = "http://collector:4318" },
			endpoint: "http://collector:4318/v1/traces", service: "tickets"},
		{name: "base endpoint with a path", cfg: func(c *Config) { c.Endpoint = "https://otel.example.com/otlp/" },
			endpoint: "https://otel.example.com/otlp/v1/traces", service: "tickets"},
		{name: "traces endpoint is used as it is", cfg: func(c *Config) {
			c.Endpoint = "http://ignored:4318"
			c.TracesEndpoint = "http://collector:4318/custom"
		}, endpoint: "http://collector:4318/custom", service: "tickets"},
		{name: "grpc keeps the URL", cfg: func(c *Config) { c.Endpoint = "http://collector:4317"; c.Protocol = "grpc" },
			endpoint: "http://collector:4317", service: "tickets"},
		{name: "disabled wins over an endpoint", cfg: func(c *Config) { c.Endpoint = "http://collector:4318"; c.Disabled = true },
			service: "tickets"},
		{name: "service name from OTEL_SERVICE_NAME", cfg: func(c *Config) {
			c.ServiceName = "tickets-eu"
			c.ResourceAttributes = "service.name=other"
		}, service: "tickets-eu"},
		{name: "service name from the resource attributes", cfg: func(c *Config) { c.ResourceAttributes = "service.name=tickets-b" },
			service: "tickets-b"},
		{name: "unknown protocol", cfg: func(c *Config) { c.Protocol = "http/json" }, err: "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{name: "endpoint without scheme", cfg: func(c *Config) { c.Endpoint = "collector:4318" }, err: "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{name: "unknown sampler", cfg: func(c *Config) { c.Sampler = "sometimes" }, err: "OTEL_TRACES_SAMPLER"},
		{name: "ratio out of range", cfg: func(c *Config) { c.Sampler = "traceidratio"; c.SamplerArg = "1.5" }, err: "OTEL_TRACES_SAMPLER_ARG"},
		{name: "resource attribute without value", cfg: func(c *Config) { c.ResourceAttributes = "team" }, err: "OTEL_RESOURCE_ATTRIBUTES"},
		{name: "headers keep their values out of the error", cfg: func(c *Config) { c.Headers = "api-key=%zzsecret" },
			err: "OTEL_EXPORTER_OTLP_HEADERS=\"...\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaults
			tc.cfg(&cfg)
			p, err := parse(cfg, "tickets")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %s", err, tc.err)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Fatalf("the error shows a header value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.endpoint != tc.endpoint {
				t.Errorf("endpoint %q, want %q", p.endpoint, tc.endpoint)
			}
			var service string
			for _, a := range p.resource {
				if a.Key == "service.name" {
					service = a.Value.AsString()
				}
			}
			if service != tc.service {
				t.Errorf("service.name %q, want %q", service, tc.service)
			}
		})
	}
}

func TestKeyValues(t *testing.T) {
	got, err := keyValues(" deployment.environment.name = prod , team=support%20desk,,")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["deployment.environment.name"] != "prod" || got["team"] != "support desk" {
		t.Fatalf("got %v", got)
	}
}

// Without an endpoint nothing is exported, but a caller's trace context
// still reaches the handler and goes on from there.
func TestOffPropagatesIncomingContext(t *testing.T) {
	tr, err := Setup(context.Background(), defaults, "tickets")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Enabled() || tr.Endpoint() != "" {
		t.Fatalf("tracing enabled without an endpoint: %q", tr.Endpoint())
	}
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := Propagator().Extract(context.Background(), propagation.MapCarrier{"traceparent": parent})
	ctx, span := tr.Provider().Tracer("test").Start(ctx, "handler")
	defer span.End()
	if span.IsRecording() {
		t.Error("a span records without an endpoint")
	}
	if got := TraceID(ctx); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("trace id %q, want the caller's", got)
	}
	if tp, _ := TraceContext(ctx); tp != parent {
		t.Errorf("traceparent passed on %q, want %q", tp, parent)
	}
	if TraceID(context.Background()) != "" {
		t.Error("a trace id without a span")
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// With an endpoint, spans reach an OTLP/HTTP receiver with the service's
// name, and Shutdown flushes what is queued.
func TestExportsToEndpoint(t *testing.T) {
	recv := otlptest.Start(t)
	cfg := defaults
	cfg.Endpoint = recv.URL
	cfg.ResourceAttributes = "deployment.environment.name=test"
	tr, err := Setup(context.Background(), cfg, "topics")
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Enabled() || tr.Endpoint() != recv.URL+"/v1/traces" {
		t.Fatalf("enabled %v endpoint %q", tr.Enabled(), tr.Endpoint())
	}
	// The HTTP client's instrumentation reads otel's globals: install the
	// provider as boot does.
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(tr.Provider())
	otel.SetTextMapPropagator(Propagator())
	t.Cleanup(func() { otel.SetTracerProvider(prevTP); otel.SetTextMapPropagator(prevProp) })
	ctx, span := otel.Tracer("test").Start(context.Background(), "work", trace.WithSpanKind(trace.SpanKindServer))
	// An outgoing call made for the request is its child and carries its
	// trace context.
	var gotParent string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotParent = r.Header.Get("traceparent")
	}))
	defer upstream.Close()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, upstream.URL, nil)
	resp, err := HTTPClient(nil, 5*time.Second).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	span.End()
	// A client span without a parent (a background poll) is dropped.
	_, orphan := otel.Tracer("test").Start(context.Background(), "orphan", trace.WithSpanKind(trace.SpanKindClient))
	if orphan.IsRecording() {
		t.Error("a client span without a parent is sampled")
	}
	orphan.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := recv.Spans()
	if len(spans) != 2 {
		t.Fatalf("got %d spans, want the server span and its client span: %v", len(spans), spans)
	}
	var server, client otlptest.Span
	for _, s := range spans {
		if s.Kind == "server" {
			server = s
		} else {
			client = s
		}
	}
	if server.Name != "work" || server.Service != "topics" || server.TraceID != span.SpanContext().TraceID().String() {
		t.Errorf("server span %v", server)
	}
	if client.Kind != "client" || client.ParentSpanID != server.SpanID || client.TraceID != server.TraceID {
		t.Errorf("client span %v is not the child of %v", client, server)
	}
	if !strings.Contains(gotParent, server.TraceID+"-"+client.SpanID) {
		t.Errorf("upstream got traceparent %q, want the client span %s of trace %s", gotParent, client.SpanID, server.TraceID)
	}
}

func TestSamplers(t *testing.T) {
	for name, want := range map[string]sdktrace.SamplingDecision{
		"always_on": sdktrace.RecordAndSample, "always_off": sdktrace.Drop,
		"parentbased_always_on": sdktrace.RecordAndSample, "parentbased_always_off": sdktrace.Drop,
		"traceidratio": sdktrace.Drop, "parentbased_traceidratio": sdktrace.Drop,
	} {
		s, err := sampler(name, "0")
		if err != nil {
			t.Fatal(err)
		}
		got := s.ShouldSample(sdktrace.SamplingParameters{ParentContext: context.Background(), TraceID: trace.TraceID{1}, Name: "x",
			Kind: trace.SpanKindServer}).Decision
		if got != want {
			t.Errorf("%s: decision %v, want %v", name, got, want)
		}
	}
}

// Setup builds a provider and installs nothing: otel's globals are the
// binary's to set (boot), whether spans are exported or not.
func TestSetupLeavesGlobalsAlone(t *testing.T) {
	recv := otlptest.Start(t)
	exporting := defaults
	exporting.Endpoint = recv.URL
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	for name, cfg := range map[string]Config{"off": defaults, "exporting": exporting} {
		tr, err := Setup(context.Background(), cfg, "tickets")
		if err != nil {
			t.Fatal(err)
		}
		if otel.GetTracerProvider() != prevTP {
			t.Errorf("%s: Setup replaced the global tracer provider", name)
		}
		// By type: a composite propagator is a slice, not comparable.
		if fmt.Sprintf("%T", otel.GetTextMapPropagator()) != fmt.Sprintf("%T", prevProp) {
			t.Errorf("%s: Setup replaced the global propagator", name)
		}
		if _, noop := tr.Provider().(noop.TracerProvider); noop == tr.Enabled() {
			t.Errorf("%s: enabled %v but provider %T", name, tr.Enabled(), tr.Provider())
		}
		if err := tr.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
