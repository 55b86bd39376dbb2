// Package telemetry sets up OpenTelemetry tracing for a binary from the
// standard OTEL_* variables: a TracerProvider and the W3C trace context +
// baggage propagator. Spans are exported over OTLP only when an endpoint is
// configured; otherwise the provider is a no-op, but incoming trace context
// is still carried on (logs, problem bodies, NATS headers and outgoing calls
// keep the caller's trace id). The package sets no global: boot installs the
// provider as OpenTelemetry's global, once per process (see boot).
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Config is the tracing configuration, read with the rest of a binary's
// configuration (pkg/config). The variables and their meaning are the
// OpenTelemetry SDK's; the SDK's other variables (OTEL_BSP_*,
// OTEL_SPAN_*_LIMIT, ...) are read by the SDK itself from the process
// environment, and the exporter's (OTEL_EXPORTER_OTLP_TIMEOUT,
// _COMPRESSION, _CERTIFICATE, ...) by the exporter (otlp.go), as the SDK's
// exporters did.
type Config struct {
	Endpoint           string `env:"OTEL_EXPORTER_OTLP_ENDPOINT" default:"" desc:"OTLP collector URL (http/protobuf: http://collector:4318, traces go to its /v1/traces; grpc: http://collector:4317); empty = spans are not exported (trace context is still propagated)"`
	TracesEndpoint     string `env:"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" default:"" desc:"full URL for traces; overrides OTEL_EXPORTER_OTLP_ENDPOINT"`
	Protocol           string `env:"OTEL_EXPORTER_OTLP_PROTOCOL" default:"http/protobuf" desc:"http/protobuf or grpc"`
	Headers            string `env:"OTEL_EXPORTER_OTLP_HEADERS" default:"" desc:"key=value,... sent with every export (percent-encoded values), e.g. a collector's API key"`
	ServiceName        string `env:"OTEL_SERVICE_NAME" default:"" desc:"service.name of the spans; empty = the binary's name (auth, tickets, importreply...)"`
	ResourceAttributes string `env:"OTEL_RESOURCE_ATTRIBUTES" default:"" desc:"key=value,... added to every span's resource (deployment.environment.name=prod)"`
	Sampler            string `env:"OTEL_TRACES_SAMPLER" default:"parentbased_always_on" desc:"always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio"`
	SamplerArg         string `env:"OTEL_TRACES_SAMPLER_ARG" default:"" desc:"the ratio (0-1) of the traceidratio samplers; empty = 1"`
	Disabled           bool   `env:"OTEL_SDK_DISABLED" default:"false" desc:"true: no spans at all, whatever the endpoint (trace context is still propagated)"`
}

// Protocols the exporter speaks.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Tracing is the set-up provider; Shutdown flushes it.
type Tracing struct {
	provider *sdktrace.TracerProvider // nil: not exporting
	endpoint string
}

// Enabled reports whether spans are exported.
func (t *Tracing) Enabled() bool { return t != nil && t.provider != nil }

// Provider is the TracerProvider to install: the exporting one, or a no-op
// one when spans are not exported (Recording then reports false).
func (t *Tracing) Provider() trace.TracerProvider {
	if !t.Enabled() {
		return noop.NewTracerProvider()
	}
	return t.provider
}

// Endpoint is where spans go ("" when not exporting).
func (t *Tracing) Endpoint() string {
	if t == nil {
		return ""
	}
	return t.endpoint
}

// Shutdown exports the spans still queued and stops the provider, at most
// until ctx ends. Safe on a nil or disabled Tracing.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	if err := t.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("telemetry: shutdown: %w", err)
	}
	return nil
}

// Propagator is the W3C trace context + baggage propagator that boot
// installs globally with the provider.
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// Recording reports whether spans may be recorded: false once boot has
// installed the no-op provider (no endpoint, or OTEL_SDK_DISABLED). The
// per-call instrumentation (the Gin middleware, the pgx and Redis hooks)
// is only installed when it is true: with nothing exported it cost auth a
// third more CPU per request (172 -> 247 µs in make bench). The caller's
// trace context is carried on either way (Propagated, natsbus).
func Recording() bool {
	_, off := otel.GetTracerProvider().(noop.TracerProvider)
	return !off
}

// Setup checks cfg and builds the TracerProvider of the binary service (the
// default service.name); it installs nothing (Provider). An invalid setting
// is an error even when nothing is exported, so a typo does not go
// unnoticed.
func Setup(ctx context.Context, cfg Config, service string) (*Tracing, error) {
	p, err := parse(cfg, service)
	if err != nil {
		return nil, err
	}
	if p.endpoint == "" {
		return &Tracing{}, nil
	}
	exp, err := p.exporter(ctx)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(p.resource...))
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithSampler(p.sampler))
	return &Tracing{provider: tp, endpoint: p.endpoint}, nil
}

// parsed is a checked Config.
type parsed struct {
	endpoint string // full URL (http) or URL (grpc); "" = not exporting
	protocol string
	headers  map[string]string
	resource []attribute.KeyValue
	sampler  sdktrace.Sampler
}

func parse(cfg Config, service string) (parsed, error) {
	var p parsed
	var errs []error
	bad := func(name, value, why string) {
		errs = append(errs, fmt.Errorf("telemetry: %s=%q: %s", name, value, why))
	}
	p.protocol = strings.ToLower(strings.TrimSpace(cfg.Protocol))
	if p.protocol == "" {
		p.protocol = ProtocolHTTP
	}
	if p.protocol != ProtocolHTTP && p.protocol != ProtocolGRPC {
		bad("OTEL_EXPORTER_OTLP_PROTOCOL", cfg.Protocol, "not supported (http/protobuf or grpc)")
	}
	var err error
	if p.sampler, err = sampler(cfg.Sampler, cfg.SamplerArg); err != nil {
		errs = append(errs, err)
	}
	if p.headers, err = keyValues(cfg.Headers); err != nil {
		bad("OTEL_EXPORTER_OTLP_HEADERS", "...", err.Error()) // values may be secrets
	}
	attrs, err := keyValues(cfg.ResourceAttributes)
	if err != nil {
		bad("OTEL_RESOURCE_ATTRIBUTES", cfg.ResourceAttributes, err.Error())
	}
	name := strings.TrimSpace(cfg.ServiceName)
	if name == "" {
		name = attrs["service.name"]
	}
	if name == "" {
		name = service
	}
	for k, v := range attrs {
		if k != "service.name" {
			p.resource = append(p.resource, attribute.String(k, v))
		}
	}
	p.resource = append(p.resource, attribute.String("service.name", name))

	if p.endpoint, err = endpoint(cfg, p.protocol); err != nil {
		errs = append(errs, err)
	}
	if cfg.Disabled {
		p.endpoint = ""
	}
	return p, errors.Join(errs...)
}

// endpoint resolves where traces go: the traces endpoint as it is, or the
// base endpoint with the signal's path (http/protobuf); "" when neither is
// set.
func endpoint(cfg Config, protocol string) (string, error) {
	name, raw := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", strings.TrimSpace(cfg.TracesEndpoint)
	full := raw != ""
	if !full {
		name, raw = "OTEL_EXPORTER_OTLP_ENDPOINT", strings.TrimSpace(cfg.Endpoint)
	}
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("telemetry: %s=%q: not an absolute http(s) URL", name, raw)
	}
	if !full && protocol == ProtocolHTTP {
		u.Path = strings.TrimRight(u.Path, "/") + "/v1/traces"
	}
	return u.String(), nil
}

// exporter is the in-repo OTLP exporter (otlp.go); the SDK's other
// OTEL_EXPORTER_OTLP_* variables come from the process environment, as the
// SDK's exporters read them.
func (p parsed) exporter(context.Context) (sdktrace.SpanExporter, error) {
	exp, err := newExporter(p.protocol, p.endpoint, p.headers, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("telemetry: exporter: %w", err)
	}
	return exp, nil
}

// sampler builds the OTEL_TRACES_SAMPLER sampler, wrapped in
// dropOrphanClients.
func sampler(name, arg string) (sdktrace.Sampler, error) {
	ratio := 1.0
	if a := strings.TrimSpace(arg); a != "" {
		r, err := strconv.ParseFloat(a, 64)
		if err != nil || r < 0 || r > 1 {
			return nil, fmt.Errorf("telemetry: OTEL_TRACES_SAMPLER_ARG=%q: not a ratio between 0 and 1", arg)
		}
		ratio = r
	}
	var s sdktrace.Sampler
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "always_on":
		s = sdktrace.AlwaysSample()
	case "always_off":
		s = sdktrace.NeverSample()
	case "traceidratio":
		s = sdktrace.TraceIDRatioBased(ratio)
	case "parentbased_always_on", "":
		s = sdktrace.ParentBased(sdktrace.AlwaysSample())
	case "parentbased_always_off":
		s = sdktrace.ParentBased(sdktrace.NeverSample())
	case "parentbased_traceidratio":
		s = sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))
	default:
		return nil, fmt.Errorf("telemetry: OTEL_TRACES_SAMPLER=%q: unknown sampler", name)
	}
	return dropOrphanClients{s}, nil
}

// dropOrphanClients does not sample a client span that has no parent: a
// database query, Redis command or outgoing HTTP call made outside any
// request or message (a relay's poll, a cache refresh) would otherwise be
// a trace of its own every few seconds. Work done for a request or a
// message has the request's or message's span as its parent.
type dropOrphanClients struct{ sdktrace.Sampler }

func (s dropOrphanClients) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if p.Kind == trace.SpanKindClient && !trace.SpanContextFromContext(p.ParentContext).IsValid() {
		return sdktrace.SamplingResult{Decision: sdktrace.Drop,
			Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState()}
	}
	return s.Sampler.ShouldSample(p)
}

func (s dropOrphanClients) Description() string {
	return "DropOrphanClients{" + s.Sampler.Description() + "}"
}

// keyValues parses the W3C-baggage-like lists of OTEL_RESOURCE_ATTRIBUTES
// and OTEL_EXPORTER_OTLP_HEADERS: key=value pairs separated by commas, the
// values percent-encoded.
func keyValues(s string) (map[string]string, error) {
	out := map[string]string{}
	for part := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value", strings.TrimSpace(k))
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("the value of %q is not percent-encoded", k)
		}
		out[k] = dv
	}
	return out, nil
}

// HTTPTransport wraps an outgoing HTTP transport (nil: the default one)
// so that every request gets a client span and carries the trace context
// of its request context (traceparent header).
func HTTPTransport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return otelhttp.NewTransport(rt)
}

// HTTPClient returns a copy of c (nil: a new client with timeout) whose
// transport is traced (HTTPTransport).
func HTTPClient(c *http.Client, timeout time.Duration) *http.Client {
	if c == nil {
		return &http.Client{Timeout: timeout, Transport: HTTPTransport(nil)}
	}
	cp := *c
	cp.Transport = HTTPTransport(c.Transport)
	return &cp
}

// TraceID is the trace id of ctx's span (32 hex digits), or "" when ctx has
// no valid span context.
func TraceID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return sc.TraceID().String()
	}
	return ""
}

// TraceContext returns the W3C traceparent and tracestate of ctx's span
// ("" when ctx has none): what an asynchronous hand-over (the outbox)
// stores to continue the trace later.
func TraceContext(ctx context.Context) (traceparent, tracestate string) {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"], c["tracestate"]
}

// WithTraceContext returns ctx carrying the remote span context of a stored
// traceparent and tracestate (TraceContext); ctx unchanged when they do not
// parse.
func WithTraceContext(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent, "tracestate": tracestate})
}
