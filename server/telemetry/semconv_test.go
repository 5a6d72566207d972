package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
)

// The trace context is spliced into a hop's params: every other byte
// stays where it was, a _meta is made where there is none, and a
// tracestate that belongs to no span of ours goes.
func TestWithTraceContext(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	both := propagation.MapCarrier{"traceparent": tp, "tracestate": "a=1"}
	only := propagation.MapCarrier{"traceparent": tp}
	for _, tc := range []struct {
		name    string
		params  string
		carrier propagation.MapCarrier
		want    string
	}{
		{"no params", ``, only, `{"_meta":{"traceparent":"` + tp + `"}}`},
		{"null params", `null`, only, `{"_meta":{"traceparent":"` + tp + `"}}`},
		{"no _meta", `{"name":"x", "arguments":{"<&>":1e2}}`, both,
			`{"name":"x", "arguments":{"<&>":1e2},"_meta":{"traceparent":"` + tp + `","tracestate":"a=1"}}`},
		{"_meta kept", `{"_meta":{"progressToken":7, "traceparent":"old"},"name":"x"}`, only,
			`{"_meta":{"progressToken":7, "traceparent":"` + tp + `"},"name":"x"}`},
		{"stale tracestate", `{"_meta":{"tracestate":"old=1"}}`, only, `{"_meta":{"traceparent":"` + tp + `"}}`},
		{"no context", `{"name":"x"}`, propagation.MapCarrier{}, `{"name":"x"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := withTraceContext(json.RawMessage(tc.params), tc.carrier)
			if err != nil || string(got) != tc.want {
				t.Errorf("got %s, %v\nwant %s", got, err, tc.want)
			}
		})
	}
	if _, err := withTraceContext(json.RawMessage(`{"_meta":5}`), only); err == nil {
		t.Error("a _meta that is no object was overwritten")
	}
}

// Label values come from bounded sets: a method or tool a client invents
// is _OTHER or _unknown, a code nobody reserved is _OTHER.
func TestLabelsAreBounded(t *testing.T) {
	for _, tc := range []struct {
		call         traffic.Call
		tool, prompt string
	}{
		{traffic.Call{Method: "tools/call", Group: "g", Target: "echo", Status: traffic.StatusOK}, "echo", ""},
		{traffic.Call{Method: "tools/call", Group: "g", Target: "echo", Status: traffic.StatusBlocked}, "echo", ""},
		{traffic.Call{Method: "tools/call", Target: "g__made_up", Status: traffic.StatusNotFound}, unknownTarget, ""},
		{traffic.Call{Method: "tools/call", Group: "g", Target: "made_up", Status: traffic.StatusNotFound}, unknownTarget, ""},
		{traffic.Call{Method: "tools/call", Params: json.RawMessage(`{"name":"get_dynamic_tools"}`), Status: traffic.StatusOK}, "get_dynamic_tools", ""},
		{traffic.Call{Method: "tools/call", Params: json.RawMessage(`{"name":"search_dynamic_tools"}`), Status: traffic.StatusOK}, "search_dynamic_tools", ""},
		{traffic.Call{Method: "tools/call", Params: json.RawMessage(`{"name":"made_up"}`), Status: traffic.StatusToolError}, unknownTarget, ""},
		{traffic.Call{Method: "prompts/get", Group: "g", Target: "p", Status: traffic.StatusOK}, "", "p"},
		{traffic.Call{Method: "resources/read", Group: "g", Target: "file:///x", Status: traffic.StatusOK}, "", ""},
	} {
		if tool, prompt := callTarget(&tc.call); tool != tc.tool || prompt != tc.prompt {
			t.Errorf("%+v: tool %q prompt %q, want %q %q", tc.call, tool, prompt, tc.tool, tc.prompt)
		}
	}
	for method, want := range map[string]string{"tools/call": "tools/call", "notifications/progress": "notifications/progress", "x/y": other, "": other} {
		if got := methodName(method); got != want {
			t.Errorf("methodName(%q) = %q", method, got)
		}
	}
	for _, tc := range []struct {
		status traffic.Status
		err    error
		want   string
	}{
		{traffic.StatusOK, nil, ""},
		{traffic.StatusToolError, nil, "tool_error"},
		{traffic.StatusCancelled, errors.New("context canceled"), "cancelled"},
		{traffic.StatusBlocked, jsonrpc.Errorf(-32001, "no"), "-32001"},
		{traffic.StatusError, fmt.Errorf("wrapped: %w", jsonrpc.Errorf(-32602, "bad")), "-32602"},
		{traffic.StatusError, jsonrpc.Errorf(-32700, "parse"), "-32700"},
		{traffic.StatusError, jsonrpc.Errorf(42, "an upstream's own"), other},
		{traffic.StatusError, jsonrpc.Errorf(-32100, "just outside"), other},
		{traffic.StatusError, errors.New("plain"), "-32603"},
	} {
		if got := errorType(tc.status, tc.err); got != tc.want {
			t.Errorf("errorType(%s, %v) = %q, want %q", tc.status, tc.err, got, tc.want)
		}
	}
}

func TestRequestID(t *testing.T) {
	for id, want := range map[string]string{`7`: "7", `"req-7"`: "req-7", `null`: "", ``: "", `"a\"b"`: `a"b`} {
		if got := requestID([]byte(id)); got != want {
			t.Errorf("requestID(%s) = %q, want %q", id, got, want)
		}
	}
}

// A SERVER span is named after the tool or prompt only when it is known
// to exist: a call that names an invented tool and ends before routing
// (cancelled, refused) must not make a span name of its own.
func TestSpanNamesAreBounded(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := NewTracer(exp, resource.Empty())
	for _, tc := range []struct {
		params string
		group  string
		status traffic.Status
		want   string
	}{
		{`{"name":"f__echo"}`, "f", traffic.StatusOK, "tools/call f__echo"},
		{`{"name":"f__echo"}`, "f", traffic.StatusBlocked, "tools/call f__echo"},
		{`{"name":"get_dynamic_tools"}`, "", traffic.StatusOK, "tools/call get_dynamic_tools"},
		{`{"name":"invented_1"}`, "", traffic.StatusNotFound, "tools/call"},
		{`{"name":"invented_2"}`, "", traffic.StatusCancelled, "tools/call"},
		{`{"name":"invented_3"}`, "", traffic.StatusError, "tools/call"},
	} {
		c := &traffic.Call{Transport: "stdio", Method: "tools/call", Params: json.RawMessage(tc.params), Start: time.Now()}
		ctx := tr.CallStarted(context.Background(), c)
		c.Group, c.Status = tc.group, tc.status
		tr.CallEnded(ctx, c)
		if err := tr.provider.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
		spans := exp.GetSpans()
		if got := spans[len(spans)-1].Name; got != tc.want {
			t.Errorf("%s %s: span %q, want %q", tc.params, tc.status, got, tc.want)
		}
	}
	tr.Close()
}
