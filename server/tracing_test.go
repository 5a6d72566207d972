package server

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/dynamic-mcp/dynamic-mcp/server/telemetry"
)

// otlpReceiver is a collector's OTLP/HTTP trace endpoint that keeps the
// spans it is sent, with the service name they came under.
type otlpReceiver struct {
	mu      sync.Mutex
	spans   []*tracepb.Span
	service string
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var msg coltracepb.ExportTraceServiceRequest
	if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &msg) != nil {
		http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range msg.GetResourceSpans() {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				r.service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			r.spans = append(r.spans, ss.GetSpans()...)
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// span is the one span named name, failing the test unless there is
// exactly one.
func (r *otlpReceiver) span(t *testing.T, name string) *tracepb.Span {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var found []*tracepb.Span
	var names []string
	for _, s := range r.spans {
		names = append(names, s.GetName())
		if s.GetName() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q among %q", len(found), name, names)
	}
	return found[0]
}

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// A test OTLP receiver gets a SERVER span for a client's call, continuing
// the trace of the traceparent in its _meta, and a CLIENT span, its child,
// for the hop upstream; the upstream receives that CLIENT span's
// traceparent, and the tracestate, in the _meta of the params it is sent.
func TestTracesOfACall(t *testing.T) {
	rcv := &otlpReceiver{}
	collector := httptest.NewServer(rcv)
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_SERVICE_NAME", "hub-under-test")
	t.Setenv("OTEL_TRACES_SAMPLER", "")
	t.Setenv("OTEL_SDK_DISABLED", "")
	tracer, err := telemetry.NewTracerFromEnv(context.Background(), "test", testLogger())
	if err != nil || tracer == nil {
		t.Fatalf("tracer: %v %v", tracer, err)
	}
	h := fakeHub(t)
	h.Traffic().Observe(tracer)
	c := servePipes(t, h, StdioOptions{})
	c.initialize()

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	c.send(`{"jsonrpc":"2.0","id":"call","method":"tools/call","params":{"name":"f__echo","arguments":{"text":"hi"},` +
		`"_meta":{"progressToken":"p1","traceparent":"00-` + traceID + `-` + parentID + `-01","tracestate":"rojo=00f067aa0ba902b7"}}}`)
	if got := c.answer(`"call"`); !strings.Contains(got, `"text":"hi"`) {
		t.Fatalf("echo: %s", got)
	}
	c.send(`{"jsonrpc":"2.0","id":"state","method":"tools/call","params":{"name":"f__state"}}`)
	stateAnswer := c.answer(`"state"`)
	c.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"f__fail"}}`)
	c.answer("7")
	if err := tracer.Close(); err != nil {
		t.Fatalf("flush: %v", err)
	}

	server, client := rcv.span(t, "tools/call f__echo"), rcv.span(t, "tools/call echo")
	if got := hex.EncodeToString(server.GetTraceId()); got != traceID {
		t.Errorf("SERVER span in trace %s, not the client's %s", got, traceID)
	}
	if got := hex.EncodeToString(server.GetParentSpanId()); got != parentID {
		t.Errorf("SERVER span's parent %s, not the client's span %s", got, parentID)
	}
	if server.GetKind() != tracepb.Span_SPAN_KIND_SERVER || client.GetKind() != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("kinds %v and %v", server.GetKind(), client.GetKind())
	}
	if string(client.GetTraceId()) != string(server.GetTraceId()) || string(client.GetParentSpanId()) != string(server.GetSpanId()) {
		t.Errorf("the CLIENT span is not the SERVER span's child: %x/%x under %x/%x",
			client.GetTraceId(), client.GetParentSpanId(), server.GetTraceId(), server.GetSpanId())
	}
	for _, tc := range []struct {
		span      *tracepb.Span
		key, want string
	}{
		{server, "mcp.method.name", "tools/call"},
		{server, "gen_ai.tool.name", "f__echo"},
		{server, "gen_ai.operation.name", "execute_tool"},
		{server, "jsonrpc.request.id", "call"},
		{server, "mcp.protocol.version", "2025-06-18"},
		{server, "network.transport", "pipe"},
		{server, "mcp.session.id", ""}, // stdio has none
		{server, "dynamic_mcp.group", "f"},
		{server, "dynamic_mcp.policy.action", "allow"},
		{server, "error.type", ""},
		{client, "mcp.method.name", "tools/call"},
		{client, "gen_ai.tool.name", "echo"},
		{client, "dynamic_mcp.server", "f"},
		{client, "mcp.protocol.version", "2025-11-25"},
		{client, "network.transport", "pipe"},
	} {
		if got := attr(tc.span, tc.key); got != tc.want {
			t.Errorf("%s: %s = %q, want %q", tc.span.GetName(), tc.key, got, tc.want)
		}
	}
	failed := rcv.span(t, "tools/call f__fail")
	if attr(failed, "error.type") != "-32099" || attr(failed, "rpc.response.status_code") != "-32099" ||
		failed.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR || failed.GetStatus().GetMessage() != "the fake failed on purpose" {
		t.Errorf("failed call's span: %v %v", failed.GetAttributes(), failed.GetStatus())
	}
	if len(failed.GetParentSpanId()) != 0 {
		t.Errorf("a call with no traceparent has a parent: %x", failed.GetParentSpanId())
	}
	if rcv.service != "hub-under-test" {
		t.Errorf("service.name %q", rcv.service)
	}

	// What the upstream was sent: the CLIENT span's context, the client's
	// tracestate, the progress token (the hub's own) beside them.
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	var line struct{ Result json.RawMessage }
	json.Unmarshal([]byte(stateAnswer), &line)
	json.Unmarshal(line.Result, &res)
	var state struct {
		LastMeta map[string]any `json:"lastMeta"`
	}
	if len(res.Content) == 1 {
		json.Unmarshal([]byte(res.Content[0].Text), &state)
	}
	want := "00-" + traceID + "-" + hex.EncodeToString(client.GetSpanId()) + "-01"
	if state.LastMeta["traceparent"] != want || state.LastMeta["tracestate"] != "rojo=00f067aa0ba902b7" || state.LastMeta["progressToken"] == nil {
		t.Errorf("the upstream got _meta %v, want traceparent %s", state.LastMeta, want)
	}
}

// Tracing is off unless the environment names a collector.
func TestTracingOffWithoutCollector(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER"} {
			t.Setenv(k, tc.env[k])
		}
		tracer, err := telemetry.NewTracerFromEnv(context.Background(), "test", testLogger())
		if err != nil || (tracer != nil) != tc.want {
			t.Errorf("%v: tracer %v, err %v", tc.env, tracer, err)
		}
		if tracer != nil {
			tracer.Close()
		}
	}
}
