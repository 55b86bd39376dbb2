package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // the test server accepts gzip, as a collector does
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

func testSpans(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	tid, _ := trace.TraceIDFromHex("0102030405060708090a0b0c0d0e0f10")
	sid, _ := trace.SpanIDFromHex("1112131415161718")
	pid, _ := trace.SpanIDFromHex("2122232425262728")
	lsid, _ := trace.SpanIDFromHex("3132333435363738")
	ts, _ := trace.ParseTraceState("vendor=value")
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "topics"))
	other := resource.NewSchemaless(attribute.String("service.name", "tickets"))
	start := time.Unix(1700000000, 123456789)
	scope := instrumentation.Scope{Name: "otelgin", Version: "0.1", SchemaURL: "https://scope.schema",
		Attributes: attribute.NewSet(attribute.Bool("scope.attr", true))}
	stubs := tracetest.SpanStubs{
		{
			Name: "GET /api/Topics/:id",
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid,
				TraceFlags: trace.FlagsSampled, TraceState: ts}),
			Parent:    trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: pid, Remote: true}),
			SpanKind:  trace.SpanKindServer,
			StartTime: start,
			EndTime:   start.Add(1500 * time.Microsecond),
			Attributes: []attribute.KeyValue{
				attribute.String("http.route", "/api/Topics/:id"),
				attribute.Int64("http.status_code", 404),
				attribute.Int64("zero", 0),
				attribute.Float64("ratio", 0.25),
				attribute.Bool("yes", true),
				attribute.Bool("no", false),
				attribute.StringSlice("ss", []string{"a", ""}),
				attribute.Int64Slice("is", []int64{-1, 2}),
				attribute.Float64Slice("fs", []float64{1.5}),
				attribute.BoolSlice("bs", []bool{true, false}),
				attribute.String("empty", ""),
			},
			Events: []sdktrace.Event{{Name: "exception", Time: start.Add(time.Millisecond),
				Attributes: []attribute.KeyValue{attribute.String("exception.message", "boom")}, DroppedAttributeCount: 2}},
			Links: []sdktrace.Link{{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: lsid,
				TraceFlags: trace.FlagsSampled, Remote: true}), Attributes: []attribute.KeyValue{attribute.Int("n", 1)}}},
			Status:               sdktrace.Status{Code: codes.Error, Description: "not found"},
			DroppedAttributes:    3,
			DroppedEvents:        4,
			DroppedLinks:         5,
			InstrumentationScope: scope,
			Resource:             res,
		},
		{Name: "SELECT", SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: pid}),
			SpanKind: trace.SpanKindClient, StartTime: start, EndTime: start.Add(time.Millisecond),
			Status: sdktrace.Status{Code: codes.Ok}, InstrumentationScope: instrumentation.Scope{Name: "otelpgx"}, Resource: res},
		{Name: "process mail.inbound.*", SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: lsid}),
			SpanKind: trace.SpanKindConsumer, StartTime: start, EndTime: start, Resource: other},
	}
	return stubs.Snapshots()
}

// The hand-written encoding decodes, with the generated OTLP types, to
// what the SDK's exporter sends (its tracetransform mapping).
func TestEncodeTracesDecodes(t *testing.T) {
	var req collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(encodeTraces(testSpans(t)), &req); err != nil {
		t.Fatal(err)
	}
	if len(req.ResourceSpans) != 2 {
		t.Fatalf("%d resource spans, want 2 (two resources)", len(req.ResourceSpans))
	}
	rs := req.ResourceSpans[0]
	if rs.SchemaUrl != "https://opentelemetry.io/schemas/1.26.0" || len(rs.Resource.Attributes) != 1 ||
		rs.Resource.Attributes[0].Key != "service.name" || rs.Resource.Attributes[0].Value.GetStringValue() != "topics" {
		t.Errorf("resource: %v %v", rs.SchemaUrl, rs.Resource)
	}
	if len(rs.ScopeSpans) != 2 {
		t.Fatalf("%d scope spans, want 2", len(rs.ScopeSpans))
	}
	ss := rs.ScopeSpans[0]
	if ss.SchemaUrl != "https://scope.schema" || ss.Scope.Name != "otelgin" || ss.Scope.Version != "0.1" ||
		len(ss.Scope.Attributes) != 1 || !ss.Scope.Attributes[0].Value.GetBoolValue() {
		t.Errorf("scope: %v %v", ss.SchemaUrl, ss.Scope)
	}
	s := ss.Spans[0]
	want := &tracepb.Span{
		TraceId:           mustHex("0102030405060708090a0b0c0d0e0f10"),
		SpanId:            mustHex("1112131415161718"),
		TraceState:        "vendor=value",
		ParentSpanId:      mustHex("2122232425262728"),
		Flags:             0x301,
		Name:              "GET /api/Topics/:id",
		Kind:              tracepb.Span_SPAN_KIND_SERVER,
		StartTimeUnixNano: 1700000000123456789,
		EndTimeUnixNano:   1700000000124956789,
		Attributes: []*commonpb.KeyValue{
			kvs("http.route", "/api/Topics/:id"),
			{Key: "http.status_code", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 404}}},
			{Key: "zero", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 0}}},
			{Key: "ratio", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 0.25}}},
			{Key: "yes", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}},
			{Key: "no", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: false}}},
			{Key: "ss", Value: array(str("a"), str(""))},
			{Key: "is", Value: array(&commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: -1}},
				&commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 2}})},
			{Key: "fs", Value: array(&commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 1.5}})},
			{Key: "bs", Value: array(&commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}},
				&commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: false}})},
			kvs("empty", ""),
		},
		DroppedAttributesCount: 3,
		Events: []*tracepb.Span_Event{{TimeUnixNano: 1700000000124456789, Name: "exception",
			Attributes: []*commonpb.KeyValue{kvs("exception.message", "boom")}, DroppedAttributesCount: 2}},
		DroppedEventsCount: 4,
		Links: []*tracepb.Span_Link{{TraceId: mustHex("0102030405060708090a0b0c0d0e0f10"), SpanId: mustHex("3132333435363738"),
			Attributes: []*commonpb.KeyValue{{Key: "n", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 1}}}},
			Flags:      0x301}},
		DroppedLinksCount: 5,
		Status:            &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "not found"},
	}
	// The attributes come sorted by key from the snapshot: compare as sets.
	if !sameSpan(s, want) {
		t.Errorf("span:\n got %v\nwant %v", s, want)
	}
	db := rs.ScopeSpans[1].Spans[0]
	if rs.ScopeSpans[1].Scope.Name != "otelpgx" || db.Kind != tracepb.Span_SPAN_KIND_CLIENT ||
		db.Status.Code != tracepb.Status_STATUS_CODE_OK || db.ParentSpanId != nil || db.Flags != 0x100 {
		t.Errorf("second span: %v %v", rs.ScopeSpans[1].Scope, db)
	}
	other := req.ResourceSpans[1]
	if other.SchemaUrl != "" || other.ScopeSpans[0].Scope != nil || other.ScopeSpans[0].Spans[0].Kind != tracepb.Span_SPAN_KIND_CONSUMER ||
		other.ScopeSpans[0].Spans[0].Status == nil {
		t.Errorf("third span: %v", other)
	}
}

func sameSpan(got, want *tracepb.Span) bool {
	g := proto.Clone(got).(*tracepb.Span)
	w := proto.Clone(want).(*tracepb.Span)
	byKey := func(kv []*commonpb.KeyValue) map[string]*commonpb.AnyValue {
		m := map[string]*commonpb.AnyValue{}
		for _, x := range kv {
			m[x.Key] = x.Value
		}
		return m
	}
	ga, wa := byKey(g.Attributes), byKey(w.Attributes)
	if len(ga) != len(wa) {
		return false
	}
	for k, v := range wa {
		if !proto.Equal(ga[k], v) {
			return false
		}
	}
	g.Attributes, w.Attributes = nil, nil
	return proto.Equal(g, w)
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func str(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}

func kvs(k, v string) *commonpb.KeyValue { return &commonpb.KeyValue{Key: k, Value: str(v)} }

func array(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
}

func noEnv(string) string { return "" }

// http/protobuf: headers, gzip (OTEL_EXPORTER_OTLP_COMPRESSION) and a
// retry after a 503 with Retry-After.
func TestExporterHTTP(t *testing.T) {
	var calls atomic.Int32
	var got collectortrace.ExportTraceServiceRequest
	var hdr http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		hdr = r.Header.Clone()
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body, _ := io.ReadAll(zr)
		if err := proto.Unmarshal(body, &got); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	env := map[string]string{"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TIMEOUT": "5000"}
	e, err := newExporter(ProtocolHTTP, srv.URL+"/v1/traces", map[string]string{"api-key": "k"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	e.retry = retryPolicy{initial: 10 * time.Millisecond, maxInterval: 20 * time.Millisecond, maxElapsed: time.Second}
	if e.timeout != 5*time.Second {
		t.Errorf("timeout %v", e.timeout)
	}
	if err := e.ExportSpans(context.Background(), testSpans(t)); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 {
		t.Errorf("%d calls, want 2 (one retry)", calls.Load())
	}
	if hdr.Get("Content-Type") != "application/x-protobuf" || hdr.Get("Content-Encoding") != "gzip" || hdr.Get("Api-Key") != "k" {
		t.Errorf("headers %v", hdr)
	}
	if len(got.ResourceSpans) != 2 {
		t.Errorf("got %v", &got)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.ExportSpans(context.Background(), testSpans(t)); err == nil {
		t.Error("an export after Shutdown succeeded")
	}
}

// A 400 is not retried; the server's message is in the error.
func TestExporterHTTPPermanentError(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "bad spans", http.StatusBadRequest)
	}))
	defer srv.Close()
	e, err := newExporter(ProtocolHTTP, srv.URL+"/v1/traces", nil, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	err = e.ExportSpans(context.Background(), testSpans(t))
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("bad spans")) || calls.Load() != 1 {
		t.Errorf("err %v after %d calls", err, calls.Load())
	}
}

type traceServer struct {
	collectortrace.UnimplementedTraceServiceServer
	calls atomic.Int32
	got   chan *collectortrace.ExportTraceServiceRequest
	md    chan metadata.MD
}

func (s *traceServer) Export(ctx context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	if s.calls.Add(1) == 1 {
		return nil, grpcstatus.Error(grpccodes.Unavailable, "starting")
	}
	md, _ := metadata.FromIncomingContext(ctx)
	s.md <- md
	s.got <- req
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// grpc: the Export call reaches a gRPC server (grpc-go) over cleartext
// HTTP/2, with the headers as metadata and gzip; Unavailable is retried.
func TestExporterGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	ts := &traceServer{got: make(chan *collectortrace.ExportTraceServiceRequest, 1), md: make(chan metadata.MD, 1)}
	collectortrace.RegisterTraceServiceServer(srv, ts)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	for _, gz := range []bool{false, true} {
		ts.calls.Store(0)
		env := map[string]string{}
		if gz {
			env["OTEL_EXPORTER_OTLP_COMPRESSION"] = "gzip"
		}
		e, err := newExporter(ProtocolGRPC, "http://"+ln.Addr().String(), map[string]string{"api-key": "k"}, func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		e.retry = retryPolicy{initial: 10 * time.Millisecond, maxInterval: 20 * time.Millisecond, maxElapsed: time.Second}
		if err := e.ExportSpans(context.Background(), testSpans(t)); err != nil {
			t.Fatalf("gzip %v: %v", gz, err)
		}
		md, req := <-ts.md, <-ts.got
		if len(req.ResourceSpans) != 2 || len(req.ResourceSpans[0].ScopeSpans[0].Spans) != 1 {
			t.Errorf("gzip %v: got %v", gz, req)
		}
		if v := md.Get("api-key"); len(v) != 1 || v[0] != "k" {
			t.Errorf("gzip %v: metadata %v", gz, md)
		}
		if ts.calls.Load() != 2 {
			t.Errorf("gzip %v: %d calls, want 2 (Unavailable retried)", gz, ts.calls.Load())
		}
		_ = e.Shutdown(context.Background())
	}

	// A permanent status is returned at once.
	e, err := newExporter(ProtocolGRPC, "http://"+ln.Addr().String(), map[string]string{}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	e.url = "http://" + ln.Addr().String() + "/opentelemetry.proto.collector.trace.v1.NoSuch/Export"
	if err := e.ExportSpans(context.Background(), testSpans(t)); err == nil {
		t.Error("an unknown method succeeded")
	}
}

func TestExporterBadSettings(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"timeout":     {"OTEL_EXPORTER_OTLP_TIMEOUT": "10s"},
		"certificate": {"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"},
	} {
		if _, err := newExporter(ProtocolHTTP, "http://127.0.0.1:1/v1/traces", nil, func(k string) string { return env[k] }); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
