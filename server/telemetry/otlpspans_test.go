package telemetry

import (
	"bytes"
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	sdkinstr "go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// capture is an otlptrace.Client that keeps what otlptrace's own
// transform made of the spans.
type capture struct{ got []*tracepb.ResourceSpans }

func (c *capture) Start(context.Context) error { return nil }
func (c *capture) Stop(context.Context) error  { return nil }
func (c *capture) UploadTraces(_ context.Context, rs []*tracepb.ResourceSpans) error {
	c.got = rs
	return nil
}

// stubs are spans with every field the transform fills set, in two
// scopes of one resource.
func stubs() []sdktrace.ReadOnlySpan {
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	ts, _ := trace.ParseTraceState("a=1,b=2")
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{9, 9, 9, 9, 9, 9, 9, 9}, Remote: true, TraceFlags: trace.FlagsSampled})
	link := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{7}, SpanID: trace.SpanID{8}, TraceFlags: trace.FlagsSampled})
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "dynamic-mcp"), attribute.Int("n", 0))
	start := time.Unix(1700000000, 123456789)
	attrs := []attribute.KeyValue{
		attribute.String("s", "x"), attribute.String("empty", ""), attribute.Bool("f", false), attribute.Bool("t", true),
		attribute.Int64("zero", 0), attribute.Int64("neg", -5), attribute.Float64("pi", 3.14), attribute.Float64("z", 0),
		attribute.StringSlice("ss", []string{"a", ""}), attribute.Int64Slice("is", []int64{1, 0}), attribute.BoolSlice("bs", []bool{true, false}),
		attribute.Float64Slice("fs", []float64{0.5}), {Key: "none"}, attribute.ByteSlice("b", []byte{0, 1}), attribute.ByteSlice("nb", nil),
		attribute.Slice("sl", attribute.IntValue(1), attribute.StringValue("two"), attribute.SliceValue()),
		attribute.Map("m", attribute.String("k", "v"), attribute.Map("inner", attribute.Bool("x", true))),
	}
	scope := sdkinstr.Scope{Name: instrumentation, Version: "v1", SchemaURL: "https://x/s", Attributes: attribute.NewSet(attribute.String("k", "v"))}
	return tracetest.SpanStubs{
		{
			Name:        "tools/call echo",
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled, TraceState: ts}),
			Parent:      parent, SpanKind: trace.SpanKindServer, StartTime: start, EndTime: start.Add(time.Millisecond),
			Attributes: attrs, DroppedAttributes: 2, DroppedEvents: 1, DroppedLinks: 3, ChildSpanCount: 1,
			Events: []sdktrace.Event{{Name: "exception", Time: start, Attributes: attrs[:2], DroppedAttributeCount: 1}, {Name: "bare"}},
			Links:  []sdktrace.Link{{SpanContext: link, Attributes: attrs[:1], DroppedAttributeCount: 4}, {SpanContext: parent}},
			Status: sdktrace.Status{Code: codes.Error, Description: "boom"}, Resource: res, InstrumentationScope: scope,
		},
		{
			Name:        "tools/call echo",
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{2}}),
			SpanKind:    trace.SpanKindClient, StartTime: start, EndTime: start, Status: sdktrace.Status{Code: codes.Ok},
			Resource: res, InstrumentationScope: scope,
		},
		{
			Name:        "other scope",
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{3}}),
			Resource:    res, InstrumentationScope: sdkinstr.Scope{Name: "other"},
		},
		{
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{4}}),
			Resource:    res, InstrumentationScope: scope, SpanKind: trace.SpanKind(42),
		},
	}.Snapshots()
}

// What the exporter sends is, byte for byte, what otlptrace's exporter
// marshalled for the same spans.
func TestExportRequestAsOTLPTrace(t *testing.T) {
	spans := stubs()
	c := &capture{}
	exp, err := otlptrace.New(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(t.Context(), spans); err != nil {
		t.Fatal(err)
	}
	want, err := proto.MarshalOptions{Deterministic: true}.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: c.got})
	if err != nil {
		t.Fatal(err)
	}
	got := exportRequest(spans)
	if len(want) < 500 || !bytes.Equal(got, want) {
		var msg coltracepb.ExportTraceServiceRequest
		err := proto.Unmarshal(got, &msg)
		t.Fatalf("the request differs (%v):\ngot  %v\nwant %v", err, &msg, c.got)
	}
	if exportRequest(nil) != nil {
		t.Error("a request for no spans")
	}
}

// The User-Agent names the otlptrace version in go.mod, as its exporter did.
func TestOTLPExporterVersion(t *testing.T) {
	if otlpExporterVersion != otlptrace.Version() {
		t.Errorf("otlpExporterVersion %s, otlptrace %s", otlpExporterVersion, otlptrace.Version())
	}
}
