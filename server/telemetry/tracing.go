package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	clipText "github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
)

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME (or
// OTEL_RESOURCE_ATTRIBUTES) says otherwise.
const DefaultServiceName = "dynamic-mcp"

// shutdownTimeout bounds sending the last spans when the hub stops.
const shutdownTimeout = 5 * time.Second

// maxAttr bounds, in bytes, each string a span keeps: its attributes
// (those a client writes, a tool's name, a resource's URI, a request's
// id, are clipped to it; the SDK's limit is set to it for all others, or
// to OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT when smaller), its name and its
// status's message. Spans wait in the batcher's queue (2048 of them) until
// exported: what a client sends must not be kept whole there.
const maxAttr = 1024

// instrumentation names the spans' instrumentation scope.
const instrumentation = "github.com/dynamic-mcp/dynamic-mcp/server/telemetry"

// TracingConfigured reports whether the environment names a collector for
// traces: OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn traces
// off, as the OpenTelemetry specification has them.
func TracingConfigured() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(os.Getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Tracer is a traffic.Observer that makes a SERVER span of each client
// request and a CLIENT span, its child, of each hop to an upstream, as the
// MCP semantic conventions describe them. A client's params._meta
// traceparent (and tracestate) is the SERVER span's parent; each hop's
// params._meta carries its CLIENT span's, so the upstream's spans join
// the same trace.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	once     sync.Once
	err      error
}

// NewTracerFromEnv returns a Tracer that exports over OTLP/HTTP to the
// collector the standard OTEL_EXPORTER_OTLP_* variables name, or nil and
// no error when they name none (see TracingConfigured): tracing is then
// off and costs nothing. The exporter reads the endpoint, headers, TLS,
// timeout and compression from the environment itself; the sampler
// follows OTEL_TRACES_SAMPLER. Export errors are logged to logger.
func NewTracerFromEnv(ctx context.Context, version string, logger *slog.Logger) (*Tracer, error) {
	if !TracingConfigured() {
		return nil, nil
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := os.Getenv(k); p != "" && p != "http/protobuf" {
			logger.Warn("traces are exported over OTLP/HTTP with protobuf only (the collector's port 4318)", "env", k, "value", p)
			break
		}
	}
	client, err := newOTLPHTTPFromEnv(logger)
	if err != nil {
		return nil, fmt.Errorf("otlp trace exporter: %w", err)
	}
	exp := &otlpExporter{client: client}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", DefaultServiceName), attribute.String("service.version", version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // last, so that OTEL_SERVICE_NAME wins
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("trace resource: %w", err)
	} else if err != nil {
		logger.Warn("some OTEL_RESOURCE_ATTRIBUTES were not understood", "err", err)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { logger.Warn("exporting traces", "err", err) }))
	return NewTracer(exp, res), nil
}

// NewTracer returns a Tracer that sends its spans to exp in batches, off
// the request path. Close flushes and stops it.
func NewTracer(exp sdktrace.SpanExporter, res *resource.Resource) *Tracer {
	limits := sdktrace.NewSpanLimits() // the OTEL_*_LIMIT variables
	if limits.AttributeValueLengthLimit < 0 || limits.AttributeValueLengthLimit > maxAttr {
		limits.AttributeValueLengthLimit = maxAttr
	}
	p := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithRawSpanLimits(limits))
	return &Tracer{provider: p, tracer: p.Tracer(instrumentation)}
}

// Close sends the spans not yet sent and stops the exporter, within a few
// seconds however slow the collector.
func (t *Tracer) Close() error {
	t.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		t.err = t.provider.Shutdown(ctx)
	})
	return t.err
}

type serverSpanKey struct{}
type clientSpanKey struct{}

// serverSpan is a request's span with the target its params name, read
// once.
type serverSpan struct {
	trace.Span
	target string
}

// CallStarted starts the request's SERVER span, continuing the trace
// context of its params._meta if it has one.
func (t *Tracer) CallStarted(ctx context.Context, c *traffic.Call) context.Context {
	// The params were checked whole when decoded (see traffic.Call).
	params, _ := jsonrpc.ScanObject(c.Params)
	if bytes.Contains(c.Params, []byte(`"traceparent"`)) { // most clients send none: skip the parsing
		if meta := params.Field("_meta"); meta != nil {
			ctx = propagation.TraceContext{}.Extract(ctx, metaCarrier(meta))
		}
	}
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs, attribute.String(attrMethod, c.Method), attribute.String(attrTransport, networkTransport(c.Transport)))
	if c.Transport != "stdio" { // stdio has no MCP session id; the hub's "stdio" is its own
		attrs = append(attrs, attribute.String(attrSession, clip(c.Session)), attribute.String(attrProtocolName, "http"))
	}
	if c.User != "" {
		attrs = append(attrs, attribute.String(attrUser, clip(c.User)))
	}
	if c.Protocol != "" {
		attrs = append(attrs, attribute.String(attrProtocol, clip(c.Protocol)))
	}
	if id := requestID(c.ID); id != "" {
		attrs = append(attrs, attribute.String(attrRequestID, clip(id)))
	}
	target := clip(targetOf(c.Method, params))
	attrs = appendTarget(attrs, c.Method, target)
	ctx, span := t.tracer.Start(ctx, methodName(c.Method), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attrs...), trace.WithTimestamp(c.Start))
	return context.WithValue(ctx, serverSpanKey{}, &serverSpan{span, target})
}

// CallEnded names the SERVER span after its target, now that routing
// has found it, records the outcome and ends the span.
func (t *Tracer) CallEnded(ctx context.Context, c *traffic.Call) {
	span, _ := ctx.Value(serverSpanKey{}).(*serverSpan)
	if span == nil {
		return
	}
	name := methodName(c.Method)
	// The tool or prompt as the client named it, once it is known to
	// exist (routed to a group, or one of the hub's own tools): an
	// invented name would make span names unbounded. A call cancelled or
	// refused before it was routed names nothing known.
	if named(c.Method) && span.target != "" && c.Status != traffic.StatusNotFound &&
		(c.Group != "" || c.Method == "tools/call" && hubTools[span.target]) {
		name += " " + span.target
	}
	span.SetName(name)
	attrs := []attribute.KeyValue{attribute.String(attrStatus, string(c.Status))}
	for _, kv := range [][2]string{{attrGroup, c.Group}, {attrServer, c.Server}, {attrRule, c.Rule}, {attrAction, c.Action}} {
		if kv[1] != "" {
			attrs = append(attrs, attribute.String(kv[0], kv[1]))
		}
	}
	span.SetAttributes(attrs...)
	setOutcome(span, errorType(c.Status, c.Err), c.Err)
	span.End(trace.WithTimestamp(c.Start.Add(c.Duration)))
}

// HopStarted starts the hop's CLIENT span, a child of the request's
// SERVER span, and puts its trace context in the params' _meta.
func (t *Tracer) HopStarted(ctx context.Context, h *traffic.Hop) context.Context {
	name := methodName(h.Method)
	params, _ := jsonrpc.ScanObject(h.Params) // the hub's, from checked bytes
	target := clip(targetOf(h.Method, params))
	if named(h.Method) && target != "" {
		name += " " + target // on the server's list: the hub routed it here
	}
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs, attribute.String(attrMethod, h.Method), attribute.String(attrTransport, networkTransport(h.Transport)),
		attribute.String(attrGroup, h.Group), attribute.String(attrServer, h.Server))
	if h.Protocol != "" {
		attrs = append(attrs, attribute.String(attrProtocol, h.Protocol))
	}
	attrs = appendTarget(attrs, h.Method, target)
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...),
		trace.WithTimestamp(h.Start))
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	if params, err := withTraceContext(h.Params, carrier); err == nil {
		h.Params = params
	}
	return context.WithValue(ctx, clientSpanKey{}, span)
}

// HopEnded records the hop's outcome and ends its span.
func (t *Tracer) HopEnded(ctx context.Context, h *traffic.Hop) {
	span, _ := ctx.Value(clientSpanKey{}).(trace.Span)
	if span == nil {
		return
	}
	setOutcome(span, hopErrorType(h), h.Err)
	span.End(trace.WithTimestamp(h.Start.Add(h.Duration)))
}

// Message makes no span: notifications are many and carry no duration.
func (t *Tracer) Message(context.Context, *traffic.Message) {}

// targetOf is what a request's params say it is about: the tool or
// prompt's name, or the resource's URI; "" for other methods.
func targetOf(method string, params jsonrpc.Object) string {
	switch method {
	case "tools/call", "prompts/get":
		return stringValue(params.Field("name"))
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		return stringValue(params.Field("uri"))
	}
	return ""
}

// named reports whether a span of method is named after its target, as
// the conventions ask for tools and prompts (a resource's URI would make
// span names unbounded).
func named(method string) bool { return method == "tools/call" || method == "prompts/get" }

// appendTarget adds the attributes naming target, what a request of
// method is about.
func appendTarget(attrs []attribute.KeyValue, method, target string) []attribute.KeyValue {
	if target == "" {
		return attrs
	}
	switch method {
	case "tools/call":
		attrs = append(attrs, attribute.String(attrTool, target), attribute.String(attrOperation, "execute_tool"))
	case "prompts/get":
		attrs = append(attrs, attribute.String(attrPrompt, target))
	default:
		attrs = append(attrs, attribute.String(attrResourceURI, target))
	}
	return attrs
}

// setOutcome marks a span that failed: error.type, the JSON-RPC code, and
// the ERROR status with the error's message, as the conventions ask.
func setOutcome(span trace.Span, errType string, err error) {
	if errType == "" {
		return
	}
	span.SetAttributes(attribute.String(attrErrorType, errType))
	if err == nil {
		span.SetStatus(codes.Error, errType)
		return
	}
	e := jsonrpc.ToError(err)
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		span.SetAttributes(attribute.String(attrStatusCode, strconv.Itoa(e.Code)))
	}
	span.SetStatus(codes.Error, clip(e.Message)) // may echo what the client sent
}

// clip is s cut to at most maxAttr bytes, on a character's boundary.
func clip(s string) string {
	return clipText.String(s, maxAttr)
}

// requestID is jsonrpc.request.id: a string id unquoted, a number as
// written, nothing for a null id.
func requestID(id []byte) string {
	if len(id) == 0 || string(id) == "null" {
		return ""
	}
	var s string
	if id[0] == '"' && json.Unmarshal(id, &s) == nil {
		return s
	}
	return string(id)
}
