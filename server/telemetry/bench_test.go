package telemetry

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// observeCall tells obs about one routed tools/call with its hop, as the
// hub does: what an observer adds to each call, without the hub around it.
func observeCall(obs traffic.Observer) {
	ctx := context.Background()
	c := &traffic.Call{Session: "stdio", Transport: "stdio", Protocol: "2025-06-18", ID: json.RawMessage(`1`), Method: "tools/call",
		Params: json.RawMessage(`{"name":"f__echo","arguments":{"text":"x"}}`), Start: time.Now()}
	ctx = obs.CallStarted(ctx, c)
	c.Group, c.Server, c.Target, c.Action = "f", "f", "echo", "allow"
	h := &traffic.Hop{Call: c, Group: "f", Server: "f", Transport: "stdio", Protocol: "2025-11-25", Method: "tools/call",
		Params: json.RawMessage(`{"name":"echo","arguments":{"text":"x"}}`), Start: time.Now()}
	hctx := obs.HopStarted(ctx, h)
	h.Result, h.Duration = json.RawMessage(`{"content":[{"type":"text","text":"x"}]}`), time.Millisecond
	obs.HopEnded(hctx, h)
	c.Result, c.Status, c.Duration = h.Result, traffic.StatusOK, 2*time.Millisecond
	obs.CallEnded(ctx, c)
}

func BenchmarkMetricsObserver(b *testing.B) {
	m := NewMetrics(upstream.New(&config.Config{StateDir: b.TempDir()}, nil), MetricsOptions{})
	b.ReportAllocs()
	for b.Loop() {
		observeCall(m)
	}
}

func BenchmarkTracerObserver(b *testing.B) {
	t := NewTracer(tracetest.NewNoopExporter(), resource.Empty())
	defer t.Close()
	b.ReportAllocs()
	for b.Loop() {
		observeCall(t)
	}
}
