package telemetry

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
)

// What a client writes is kept in spans at most maxAttr bytes a string:
// a 1 MiB tool name, request id, session id, resource URI and error
// message (issue 20, finding 8: 811 MB traced against 227 MB untraced)
// are exported clipped, whole characters, and a span's attributes in all
// stay within a few KiB.
func TestSpanStringsAreClipped(t *testing.T) {
	huge := strings.Repeat("é", 1<<19) // 1 MiB, two bytes a character
	quoted, _ := json.Marshal(huge)
	exp := tracetest.NewInMemoryExporter()
	tr := NewTracer(exp, resource.Empty())
	for _, method := range []string{"tools/call", "resources/read"} {
		c := &traffic.Call{Transport: "streamable-http", Session: huge, Protocol: huge, ID: quoted, Method: method,
			Params: json.RawMessage(`{"name":` + string(quoted) + `,"uri":` + string(quoted) + `}`), Start: time.Now()}
		ctx := tr.CallStarted(context.Background(), c)
		h := &traffic.Hop{Transport: "stdio", Group: "g", Server: "g", Method: method, Params: c.Params, Start: time.Now()}
		hctx := tr.HopStarted(ctx, h)
		h.Err = jsonrpc.Errorf(-32602, "unknown tool: "+huge)
		tr.HopEnded(hctx, h)
		c.Group, c.Status, c.Err = "g", traffic.StatusError, h.Err
		tr.CallEnded(ctx, c)
	}
	if err := tr.provider.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	if len(spans) != 4 {
		t.Fatalf("%d spans, want 4", len(spans))
	}
	for _, s := range spans {
		total := len(s.Name) + len(s.Status.Description)
		for _, kv := range s.Attributes {
			v := kv.Value.String()
			total += len(kv.Key) + len(v)
			if len(v) > maxAttr || !utf8.ValidString(v) {
				t.Errorf("span %.40q: %s is %d bytes (valid UTF-8 %v), want at most %d", s.Name, kv.Key, len(v), utf8.ValidString(v), maxAttr)
			}
		}
		if len(s.Name) > len("resources/read ")+maxAttr || len(s.Status.Description) > maxAttr {
			t.Errorf("span name %d bytes, status %d bytes", len(s.Name), len(s.Status.Description))
		}
		if total > 8<<10 {
			t.Errorf("span %.40q keeps %d bytes of strings, want at most 8 KiB", s.Name, total)
		}
		t.Logf("span %.40q: %d bytes of strings kept", s.Name, total)
	}
	tr.Close()
}

// An attribute the hub does not clip itself is clipped by the SDK's
// limit, which OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT may lower, not raise.
func TestSpanLimits(t *testing.T) {
	for env, want := range map[string]int{"": maxAttr, "100": 100, "1000000": maxAttr} {
		t.Run(env, func(t *testing.T) {
			t.Setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", env)
			exp := tracetest.NewInMemoryExporter()
			tr := NewTracer(exp, resource.Empty())
			c := &traffic.Call{Transport: "stdio", Method: "tools/call", Params: json.RawMessage(`{"name":"echo"}`), Start: time.Now()}
			ctx := tr.CallStarted(context.Background(), c)
			c.Group, c.Server, c.Rule, c.Status = "g", strings.Repeat("s", 1<<20), "r", traffic.StatusOK
			tr.CallEnded(ctx, c)
			if err := tr.provider.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			for _, kv := range exp.GetSpans()[0].Attributes {
				if kv.Key == attrServer && len(kv.Value.AsString()) != want {
					t.Errorf("%s kept %d bytes, want %d", kv.Key, len(kv.Value.AsString()), want)
				}
			}
		})
	}
}

// A span waiting for the collector keeps the 1 KiB of a client's 4 MiB
// URI it shows, not the whole URI: eight such calls' spans, held by the
// exporter, leave the heap within 2 MiB of where it was (32 MiB before
// clip copied what it cut).
func TestSpanKeepsNoMoreThanItShows(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := NewTracer(exp, resource.Empty())
	defer tr.Close()
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	call := func(i int) {
		params := json.RawMessage(`{"uri":"file:///` + strings.Repeat(string(rune('a'+i)), 4<<20) + `"}`)
		c := &traffic.Call{Transport: "stdio", Session: "s", ID: json.RawMessage("1"), Method: "resources/read", Params: params, Start: time.Now()}
		ctx := tr.CallStarted(context.Background(), c)
		c.Group, c.Status = "g", traffic.StatusOK
		tr.CallEnded(ctx, c)
	}
	call(0) // the tracer's own first allocations
	if err := tr.provider.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := heap()
	for i := range 8 {
		call(i)
	}
	if err := tr.provider.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := heap()
	if n := len(exp.GetSpans()); n != 9 {
		t.Fatalf("%d spans, want 9", n)
	}
	t.Logf("heap in use: %d KiB before, %d KiB with 8 more spans of 4 MiB URIs", before>>10, after>>10)
	if growth := int64(after) - int64(before); growth > 2<<20 {
		t.Errorf("8 spans keep %.1f MiB: each keeps its call's whole URI", float64(growth)/(1<<20))
	}
	runtime.KeepAlive(exp)
}
