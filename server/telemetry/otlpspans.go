package telemetry

import (
	"context"
	"fmt"
	"math"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkinstr "go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// otlpExporter is the SDK's span exporter over otlpHTTP. It stands in for
// otlptrace.Exporter, whose transform builds the spans as the generated
// messages of go.opentelemetry.io/proto/otlp and marshals them with the
// protobuf runtime (reflection, descriptors, the registry: 0.7 MB of the
// binary and initialisers in every process) for a handful of messages it
// writes here with protowire, field by field as its transform fills them
// (otlptrace/internal/tracetransform, v1.47): the bytes are those
// proto.Marshal wrote (otlpspans_test.go holds them to it).
type otlpExporter struct {
	client *otlpHTTP
	stop   sync.Once
}

var _ sdktrace.SpanExporter = (*otlpExporter)(nil)

// ExportSpans sends the spans in one ExportTraceServiceRequest.
func (e *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	body := exportRequest(spans)
	if body == nil {
		return nil
	}
	if err := e.client.upload(ctx, body); err != nil {
		return fmt.Errorf("traces export: %w", err)
	}
	return nil
}

// Shutdown closes the idle connections, once.
func (e *otlpExporter) Shutdown(ctx context.Context) error {
	e.stop.Do(func() { e.client.CloseIdleConnections() })
	return nil
}

// The field numbers of opentelemetry-proto's messages (trace/v1,
// common/v1, resource/v1, collector/trace/v1) this writes.
const (
	requestResourceSpans = 1

	resourceSpansResource, resourceSpansScopeSpans, resourceSpansSchemaURL = 1, 2, 3
	resourceAttributes                                                     = 1
	scopeSpansScope, scopeSpansSpans, scopeSpansSchemaURL                  = 1, 2, 3
	scopeName, scopeVersion, scopeAttributes                               = 1, 2, 3

	spanTraceID, spanSpanID, spanTraceState, spanParentSpanID = 1, 2, 3, 4
	spanName, spanKind, spanStart, spanEnd                    = 5, 6, 7, 8
	spanAttributes, spanDroppedAttributes, spanEvents         = 9, 10, 11
	spanDroppedEvents, spanLinks, spanDroppedLinks            = 12, 13, 14
	spanStatus, spanFlagsField                                = 15, 16

	eventTime, eventName, eventAttributes, eventDroppedAttributes   = 1, 2, 3, 4
	linkTraceID, linkSpanID, linkAttributes, linkDropped, linkFlags = 1, 2, 4, 5, 6
	statusMessage, statusCode                                       = 2, 3

	keyValueKey, keyValueValue                                           = 1, 2
	anyString, anyBool, anyInt, anyDouble, anyArray, anyKvlist, anyBytes = 1, 2, 3, 4, 5, 6, 7
	arrayValues                                                          = 1

	// SpanFlags: the flags say whether the parent is remote.
	flagsHasIsRemote, flagsIsRemote = 0x100, 0x200
)

// exportRequest is the ExportTraceServiceRequest of spans: one
// ResourceSpans per resource, in it one ScopeSpans per instrumentation
// scope, in the order they first come; nil for no spans.
func exportRequest(spans []sdktrace.ReadOnlySpan) []byte {
	type scoped struct {
		scope sdkinstr.Scope
		spans []byte
	}
	type resourced struct {
		span   sdktrace.ReadOnlySpan // the first, for its resource
		scopes []*scoped
	}
	var order []*resourced
	byResource := map[attribute.Distinct]*resourced{}
	for _, s := range spans {
		if s == nil {
			continue
		}
		key := s.Resource().Equivalent()
		r := byResource[key]
		if r == nil {
			r = &resourced{span: s}
			byResource[key] = r
			order = append(order, r)
		}
		var sc *scoped
		for _, x := range r.scopes {
			if x.scope == s.InstrumentationScope() {
				sc = x
			}
		}
		if sc == nil {
			sc = &scoped{scope: s.InstrumentationScope()}
			r.scopes = append(r.scopes, sc)
		}
		sc.spans = appendMessage(sc.spans, scopeSpansSpans, span(s))
	}
	if len(order) == 0 {
		return nil
	}
	var out []byte
	for _, r := range order {
		var rs []byte
		if res := r.span.Resource(); res != nil {
			var b []byte
			for iter := res.Iter(); iter.Next(); {
				b = appendMessage(b, resourceAttributes, keyValue(iter.Attribute()))
			}
			rs = appendMessage(rs, resourceSpansResource, b)
		}
		for _, sc := range r.scopes {
			var b []byte
			if sc.scope != (sdkinstr.Scope{}) {
				var sb []byte
				sb = appendString(sb, scopeName, sc.scope.Name)
				sb = appendString(sb, scopeVersion, sc.scope.Version)
				for iter := sc.scope.Attributes.Iter(); iter.Next(); {
					sb = appendMessage(sb, scopeAttributes, keyValue(iter.Attribute()))
				}
				b = appendMessage(b, scopeSpansScope, sb)
			}
			b = append(b, sc.spans...)
			b = appendString(b, scopeSpansSchemaURL, sc.scope.SchemaURL)
			rs = appendMessage(rs, resourceSpansScopeSpans, b)
		}
		if res := r.span.Resource(); res != nil {
			rs = appendString(rs, resourceSpansSchemaURL, res.SchemaURL())
		}
		out = appendMessage(out, requestResourceSpans, rs)
	}
	return out
}

// span is one Span message.
func span(s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	var b []byte
	b = appendBytes(b, spanTraceID, tid[:])
	b = appendBytes(b, spanSpanID, sid[:])
	b = appendString(b, spanTraceState, sc.TraceState().String())
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		b = appendBytes(b, spanParentSpanID, psid[:])
	}
	b = appendString(b, spanName, s.Name())
	b = appendVarint(b, spanKind, uint64(kind(s.SpanKind())))
	b = appendFixed64(b, spanStart, uint64(max(0, s.StartTime().UnixNano())))
	b = appendFixed64(b, spanEnd, uint64(max(0, s.EndTime().UnixNano())))
	for _, kv := range s.Attributes() {
		b = appendMessage(b, spanAttributes, keyValue(kv))
	}
	b = appendVarint(b, spanDroppedAttributes, uint64(clampUint32(s.DroppedAttributes())))
	for _, e := range s.Events() {
		var eb []byte
		eb = appendFixed64(eb, eventTime, uint64(max(0, e.Time.UnixNano())))
		eb = appendString(eb, eventName, e.Name)
		for _, kv := range e.Attributes {
			eb = appendMessage(eb, eventAttributes, keyValue(kv))
		}
		eb = appendVarint(eb, eventDroppedAttributes, uint64(clampUint32(e.DroppedAttributeCount)))
		b = appendMessage(b, spanEvents, eb)
	}
	b = appendVarint(b, spanDroppedEvents, uint64(clampUint32(s.DroppedEvents())))
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		var lb []byte
		lb = appendBytes(lb, linkTraceID, ltid[:])
		lb = appendBytes(lb, linkSpanID, lsid[:])
		for _, kv := range l.Attributes {
			lb = appendMessage(lb, linkAttributes, keyValue(kv))
		}
		lb = appendVarint(lb, linkDropped, uint64(clampUint32(l.DroppedAttributeCount)))
		lb = appendFixed32(lb, linkFlags, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
		b = appendMessage(b, spanLinks, lb)
	}
	b = appendVarint(b, spanDroppedLinks, uint64(clampUint32(s.DroppedLinks())))
	st := s.Status()
	var code uint64 // STATUS_CODE_UNSET
	switch st.Code {
	case codes.Ok:
		code = 1
	case codes.Error:
		code = 2
	}
	var sb []byte
	sb = appendString(sb, statusMessage, st.Description)
	sb = appendVarint(sb, statusCode, code)
	b = appendMessage(b, spanStatus, sb)
	return appendFixed32(b, spanFlagsField, spanFlags(sc.TraceFlags(), parent))
}

// spanFlags are the W3C trace flags with whether the parent is remote.
func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	flags := uint32(tf) | flagsHasIsRemote
	if parent.IsRemote() {
		flags |= flagsIsRemote
	}
	return flags
}

// kind is the Span.SpanKind of k (the same numbers but for unspecified).
func kind(k trace.SpanKind) uint64 {
	switch k {
	case trace.SpanKindInternal, trace.SpanKindServer, trace.SpanKindClient, trace.SpanKindProducer, trace.SpanKindConsumer:
		return uint64(k)
	}
	return 0
}

func clampUint32(v int) uint32 {
	return uint32(min(max(v, 0), math.MaxUint32))
}

// keyValue is one KeyValue message.
func keyValue(kv attribute.KeyValue) []byte {
	b := appendString(nil, keyValueKey, string(kv.Key))
	return appendMessage(b, keyValueValue, anyValue(kv.Value))
}

// anyValue is one AnyValue message: its one field is written even when
// it holds the zero value (a oneof), none for an empty value.
func anyValue(v attribute.Value) []byte {
	var b []byte
	array := func(n int, item func(i int) []byte) []byte {
		var a []byte
		for i := range n {
			a = appendMessage(a, arrayValues, item(i))
		}
		return protowire.AppendBytes(protowire.AppendTag(b, anyArray, protowire.BytesType), a)
	}
	switch v.Type() {
	case attribute.BOOL:
		return protowire.AppendVarint(protowire.AppendTag(b, anyBool, protowire.VarintType), protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		return protowire.AppendVarint(protowire.AppendTag(b, anyInt, protowire.VarintType), uint64(v.AsInt64()))
	case attribute.FLOAT64:
		return protowire.AppendFixed64(protowire.AppendTag(b, anyDouble, protowire.Fixed64Type), math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		return protowire.AppendString(protowire.AppendTag(b, anyString, protowire.BytesType), v.AsString())
	case attribute.BYTESLICE:
		return protowire.AppendBytes(protowire.AppendTag(b, anyBytes, protowire.BytesType), v.AsByteSlice())
	case attribute.BOOLSLICE:
		s := v.AsBoolSlice()
		return array(len(s), func(i int) []byte { return anyValue(attribute.BoolValue(s[i])) })
	case attribute.INT64SLICE:
		s := v.AsInt64Slice()
		return array(len(s), func(i int) []byte { return anyValue(attribute.Int64Value(s[i])) })
	case attribute.FLOAT64SLICE:
		s := v.AsFloat64Slice()
		return array(len(s), func(i int) []byte { return anyValue(attribute.Float64Value(s[i])) })
	case attribute.STRINGSLICE:
		s := v.AsStringSlice()
		return array(len(s), func(i int) []byte { return anyValue(attribute.StringValue(s[i])) })
	case attribute.SLICE:
		s := v.AsSlice()
		return array(len(s), func(i int) []byte { return anyValue(s[i]) })
	case attribute.MAP:
		var kvs []byte
		for _, kv := range v.AsMap() {
			kvs = appendMessage(kvs, arrayValues, keyValue(kv))
		}
		return protowire.AppendBytes(protowire.AppendTag(b, anyKvlist, protowire.BytesType), kvs)
	case attribute.EMPTY:
		return nil
	}
	return protowire.AppendString(protowire.AppendTag(b, anyString, protowire.BytesType), "INVALID")
}

// The proto3 scalars, left out at their zero value; a message is written
// even when empty (it is set).
func appendMessage(b []byte, num protowire.Number, m []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), m)
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return appendMessage(b, num, v)
}

func appendString(b []byte, num protowire.Number, v string) []byte {
	if v == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), v)
}

func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

func appendFixed64(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendFixed64(protowire.AppendTag(b, num, protowire.Fixed64Type), v)
}

func appendFixed32(b []byte, num protowire.Number, v uint32) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendFixed32(protowire.AppendTag(b, num, protowire.Fixed32Type), v)
}
