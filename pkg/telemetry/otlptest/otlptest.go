// Package otlptest is an OTLP/HTTP trace receiver for tests: it decodes
// the protobuf ExportTraceServiceRequest that the OpenTelemetry SDK (and
// Traefik) send to <endpoint>/v1/traces and keeps the spans, so a test can
// check which services saw a trace and how the spans nest.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened.
type Span struct {
	Service      string // resource service.name
	Scope        string // instrumentation scope
	Name         string
	Kind         string // server, client, producer, consumer, internal
	TraceID      string // 32 hex digits
	SpanID       string // 16 hex digits
	ParentSpanID string // "" for a root span
	Attributes   map[string]string
	Start, End   time.Time
}

func (s Span) String() string {
	return fmt.Sprintf("%s %s %q trace=%s span=%s parent=%s", s.Service, s.Kind, s.Name, s.TraceID, s.SpanID, s.ParentSpanID)
}

// Receiver is a running OTLP/HTTP receiver.
type Receiver struct {
	// URL is the base endpoint (OTEL_EXPORTER_OTLP_ENDPOINT); traces are
	// posted to URL + "/v1/traces".
	URL string
	srv *httptest.Server

	mu       sync.Mutex
	spans    []Span
	requests int
	errs     []string
}

// Start starts a receiver on 127.0.0.1 and stops it when t ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	r, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// Listen starts a receiver on addr (for TestMain, which has no t); Close
// stops it.
func Listen(addr string) (*Receiver, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	r := &Receiver{}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	_ = r.srv.Listener.Close()
	r.srv.Listener = ln
	r.srv.Start()
	r.URL = r.srv.URL
	return r, nil
}

// Close stops the receiver.
func (r *Receiver) Close() { r.srv.Close() }

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		r.fail(w, http.StatusNotFound, "unexpected "+req.Method+" "+req.URL.Path)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		r.fail(w, http.StatusUnsupportedMediaType, "content type "+ct)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			r.fail(w, http.StatusBadRequest, err.Error())
			return
		}
		defer gz.Close()
		body = gz
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		r.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	var msg collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &msg); err != nil {
		r.fail(w, http.StatusBadRequest, "undecodable request: "+err.Error())
		return
	}
	var got []Span
	for _, rs := range msg.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				got = append(got, Span{
					Service:      service,
					Scope:        ss.GetScope().GetName(),
					Name:         s.GetName(),
					Kind:         kind(s.GetKind()),
					TraceID:      hex.EncodeToString(s.GetTraceId()),
					SpanID:       hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hexOrEmpty(s.GetParentSpanId()),
					Attributes:   attrs(s.GetAttributes()),
					Start:        time.Unix(0, int64(s.GetStartTimeUnixNano())),
					End:          time.Unix(0, int64(s.GetEndTimeUnixNano())),
				})
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.requests++
	r.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *Receiver) fail(w http.ResponseWriter, status int, msg string) {
	r.mu.Lock()
	r.errs = append(r.errs, msg)
	r.mu.Unlock()
	http.Error(w, msg, status)
}

// Spans returns every span received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// Trace returns the received spans of one trace.
func (r *Receiver) Trace(traceID string) []Span {
	var out []Span
	for _, s := range r.Spans() {
		if s.TraceID == traceID {
			out = append(out, s)
		}
	}
	return out
}

// Errors are the requests the receiver refused (wrong path, type or body).
func (r *Receiver) Errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs)
}

// Requests is how many exports were received.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// WaitFor polls until ok is true for the spans received so far and returns
// them; after timeout it fails t with the spans it has.
func (r *Receiver) WaitFor(t testing.TB, timeout time.Duration, what string, ok func([]Span) bool) []Span {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		spans := r.Spans()
		if ok(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			lines := make([]string, len(spans))
			for i, s := range spans {
				lines[i] = s.String()
			}
			t.Fatalf("after %s, no %s among %d spans (refused exports: %v):\n%s", timeout, what, len(spans), r.Errors(), strings.Join(lines, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func hexOrEmpty(b []byte) string {
	if len(b) == 0 || strings.Trim(hex.EncodeToString(b), "0") == "" {
		return ""
	}
	return hex.EncodeToString(b)
}

func kind(k tracepb.Span_SpanKind) string {
	switch k {
	case tracepb.Span_SPAN_KIND_SERVER:
		return "server"
	case tracepb.Span_SPAN_KIND_CLIENT:
		return "client"
	case tracepb.Span_SPAN_KIND_PRODUCER:
		return "producer"
	case tracepb.Span_SPAN_KIND_CONSUMER:
		return "consumer"
	case tracepb.Span_SPAN_KIND_INTERNAL:
		return "internal"
	}
	return "unspecified"
}

// attrs flattens attribute values to strings.
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		v := kv.GetValue()
		var s string
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			s = x.StringValue
		case *commonpb.AnyValue_IntValue:
			s = fmt.Sprint(x.IntValue)
		case *commonpb.AnyValue_BoolValue:
			s = fmt.Sprint(x.BoolValue)
		case *commonpb.AnyValue_DoubleValue:
			s = fmt.Sprint(x.DoubleValue)
		default:
			s = v.String()
		}
		out[kv.GetKey()] = s
	}
	return out
}
