package telemetry

import (
	"encoding/binary"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The OTLP trace request (opentelemetry/proto/collector/trace/v1
// ExportTraceServiceRequest) is encoded here by hand, field by field, as
// the SDK's exporters do through the protobuf runtime: those exporters
// (and with them protobuf's and gRPC's registries, types and init work)
// made each binary 17 MB larger and cost every idle process about 10 MB of
// RSS (topics 31 -> 21 MB). The field numbers are the .proto files'; the
// mapping of spans to messages is the SDK's (otlptrace/internal/
// tracetransform). otlptest decodes the result with the generated types.

// protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// pb appends protobuf fields to a byte slice. An embedded message is
// written by begin/end: its length is patched in once its content is
// known (a fixed 5-byte varint, which every decoder accepts).
type pb struct{ b []byte }

func (e *pb) tag(field, wire int) { e.varint(uint64(field)<<3 | uint64(wire)) }

func (e *pb) varint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }

func (e *pb) uint(field int, v uint64) {
	if v != 0 {
		e.tag(field, wireVarint)
		e.varint(v)
	}
}

func (e *pb) fixed64(field int, v uint64) {
	if v != 0 {
		e.tag(field, wireFixed64)
		e.b = binary.LittleEndian.AppendUint64(e.b, v)
	}
}

func (e *pb) fixed32(field int, v uint32) {
	if v != 0 {
		e.tag(field, wireFixed32)
		e.b = binary.LittleEndian.AppendUint32(e.b, v)
	}
}

func (e *pb) str(field int, s string) {
	if s != "" {
		e.tag(field, wireBytes)
		e.varint(uint64(len(s)))
		e.b = append(e.b, s...)
	}
}

func (e *pb) bytes(field int, b []byte) {
	if len(b) != 0 {
		e.tag(field, wireBytes)
		e.varint(uint64(len(b)))
		e.b = append(e.b, b...)
	}
}

// begin starts an embedded message in field; end closes it.
func (e *pb) begin(field int) int {
	e.tag(field, wireBytes)
	e.b = append(e.b, 0x80, 0x80, 0x80, 0x80, 0)
	return len(e.b)
}

func (e *pb) end(start int) {
	n := len(e.b) - start
	l := e.b[start-5 : start]
	for i := range 4 {
		l[i] = byte(n>>(7*i)) | 0x80
	}
	l[4] = byte(n >> 28)
}

// encodeTraces returns the ExportTraceServiceRequest of spans, grouped by
// resource and then by instrumentation scope, in the order first seen.
func encodeTraces(spans []sdktrace.ReadOnlySpan) []byte {
	type scopeKey struct {
		res   attribute.Distinct
		scope instrumentation.Scope
	}
	type group struct {
		res    *resource.Resource
		scopes []instrumentation.Scope
		spans  map[instrumentation.Scope][]sdktrace.ReadOnlySpan
	}
	var order []attribute.Distinct
	groups := map[attribute.Distinct]*group{}
	seen := map[scopeKey]bool{}
	for _, s := range spans {
		if s == nil {
			continue
		}
		rk := s.Resource().Equivalent()
		g := groups[rk]
		if g == nil {
			g = &group{res: s.Resource(), spans: map[instrumentation.Scope][]sdktrace.ReadOnlySpan{}}
			groups[rk] = g
			order = append(order, rk)
		}
		sc := s.InstrumentationScope()
		if !seen[scopeKey{rk, sc}] {
			seen[scopeKey{rk, sc}] = true
			g.scopes = append(g.scopes, sc)
		}
		g.spans[sc] = append(g.spans[sc], s)
	}

	e := &pb{b: make([]byte, 0, 256*len(spans))}
	for _, rk := range order {
		g := groups[rk]
		rs := e.begin(1) // resource_spans
		if g.res != nil {
			r := e.begin(1) // resource
			for iter := g.res.Iter(); iter.Next(); {
				e.keyValue(1, iter.Attribute())
			}
			e.end(r)
		}
		for _, sc := range g.scopes {
			ss := e.begin(2) // scope_spans
			if sc != (instrumentation.Scope{}) {
				is := e.begin(1) // scope
				e.str(1, sc.Name)
				e.str(2, sc.Version)
				for iter := sc.Attributes.Iter(); iter.Next(); {
					e.keyValue(3, iter.Attribute())
				}
				e.end(is)
			}
			for _, s := range g.spans[sc] {
				e.span(2, s)
			}
			e.str(3, sc.SchemaURL)
			e.end(ss)
		}
		if g.res != nil {
			e.str(3, g.res.SchemaURL())
		}
		e.end(rs)
	}
	return e.b
}

func (e *pb) span(field int, s sdktrace.ReadOnlySpan) {
	m := e.begin(field)
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	e.bytes(1, tid[:])
	e.bytes(2, sid[:])
	e.str(3, sc.TraceState().String())
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		e.bytes(4, psid[:])
	}
	e.str(5, s.Name())
	e.uint(6, uint64(spanKind(s.SpanKind())))
	e.fixed64(7, unixNano(s.StartTime().UnixNano()))
	e.fixed64(8, unixNano(s.EndTime().UnixNano()))
	for _, kv := range s.Attributes() {
		e.keyValue(9, kv)
	}
	e.uint(10, clampUint32(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		em := e.begin(11)
		e.fixed64(1, unixNano(ev.Time.UnixNano()))
		e.str(2, ev.Name)
		for _, kv := range ev.Attributes {
			e.keyValue(3, kv)
		}
		e.uint(4, clampUint32(ev.DroppedAttributeCount))
		e.end(em)
	}
	e.uint(12, clampUint32(s.DroppedEvents()))
	for _, l := range s.Links() {
		lm := e.begin(13)
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		e.bytes(1, ltid[:])
		e.bytes(2, lsid[:])
		e.str(3, l.SpanContext.TraceState().String())
		for _, kv := range l.Attributes {
			e.keyValue(4, kv)
		}
		e.uint(5, clampUint32(l.DroppedAttributeCount))
		e.fixed32(6, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
		e.end(lm)
	}
	e.uint(14, clampUint32(s.DroppedLinks()))
	st := e.begin(15) // status, always present
	e.str(2, s.Status().Description)
	e.uint(3, uint64(statusCode(s.Status().Code)))
	e.end(st)
	e.fixed32(16, spanFlags(sc.TraceFlags(), parent))
	e.end(m)
}

// keyValue writes a KeyValue message in field.
func (e *pb) keyValue(field int, kv attribute.KeyValue) {
	m := e.begin(field)
	e.str(1, string(kv.Key))
	e.anyValue(2, kv.Value)
	e.end(m)
}

// anyValue writes an AnyValue message in field (its oneof set, even to a
// zero value, as the generated code does).
func (e *pb) anyValue(field int, v attribute.Value) {
	m := e.begin(field)
	switch v.Type() {
	case attribute.BOOL:
		e.tag(2, wireVarint)
		if v.AsBool() {
			e.varint(1)
		} else {
			e.varint(0)
		}
	case attribute.INT64:
		e.tag(3, wireVarint)
		e.varint(uint64(v.AsInt64()))
	case attribute.FLOAT64:
		e.tag(4, wireFixed64)
		e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		e.tag(1, wireBytes)
		e.varint(uint64(len(v.AsString())))
		e.b = append(e.b, v.AsString()...)
	case attribute.BYTESLICE:
		e.tag(7, wireBytes)
		e.varint(uint64(len(v.AsByteSlice())))
		e.b = append(e.b, v.AsByteSlice()...)
	case attribute.BOOLSLICE:
		a := e.begin(5)
		for _, x := range v.AsBoolSlice() {
			e.anyValue(1, attribute.BoolValue(x))
		}
		e.end(a)
	case attribute.INT64SLICE:
		a := e.begin(5)
		for _, x := range v.AsInt64Slice() {
			e.anyValue(1, attribute.Int64Value(x))
		}
		e.end(a)
	case attribute.FLOAT64SLICE:
		a := e.begin(5)
		for _, x := range v.AsFloat64Slice() {
			e.anyValue(1, attribute.Float64Value(x))
		}
		e.end(a)
	case attribute.STRINGSLICE:
		a := e.begin(5)
		for _, x := range v.AsStringSlice() {
			e.anyValue(1, attribute.StringValue(x))
		}
		e.end(a)
	case attribute.SLICE:
		a := e.begin(5)
		for _, x := range v.AsSlice() {
			e.anyValue(1, x)
		}
		e.end(a)
	case attribute.MAP:
		l := e.begin(6)
		for _, kv := range v.AsMap() {
			e.keyValue(1, kv)
		}
		e.end(l)
	case attribute.EMPTY:
		// An empty AnyValue.
	default:
		e.tag(1, wireBytes)
		e.varint(uint64(len("INVALID")))
		e.b = append(e.b, "INVALID"...)
	}
	e.end(m)
}

// spanFlags are the W3C trace flags and whether the parent (or linked
// span) is remote (SpanFlags: bit 8, known; bit 9, remote).
func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	flags := uint32(tf) | 0x100
	if parent.IsRemote() {
		flags |= 0x200
	}
	return flags
}

// spanKind: OTLP's SpanKind has the API's numbers (unspecified 0 to
// consumer 5).
func spanKind(k trace.SpanKind) int {
	if k < trace.SpanKindInternal || k > trace.SpanKindConsumer {
		return 0
	}
	return int(k)
}

// statusCode: OTLP's UNSET 0, OK 1, ERROR 2 (the API numbers Error 1, Ok 2).
func statusCode(c codes.Code) int {
	switch c {
	case codes.Ok:
		return 1
	case codes.Error:
		return 2
	}
	return 0
}

func unixNano(n int64) uint64 { return uint64(max(0, n)) }

func clampUint32(v int) uint64 {
	return uint64(min(max(v, 0), math.MaxUint32))
}
