package telemetry

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
)

// A call of a caller the face knows carries it as user.id; one of no
// known caller (stdio) carries none.
func TestSpanNamesTheCaller(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := NewTracer(exp, resource.Empty())
	defer tr.Close()
	for _, user := range []string{"jwt:alice", ""} {
		c := &traffic.Call{Transport: "streamable-http", Session: "s", User: user, Method: "ping", Start: time.Now()}
		tr.CallEnded(tr.CallStarted(context.Background(), c), c)
	}
	tr.provider.ForceFlush(context.Background())
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	for i, want := range []string{"jwt:alice", ""} {
		got := ""
		for _, kv := range spans[i].Attributes {
			if string(kv.Key) == attrUser {
				got = kv.Value.AsString()
			}
		}
		if got != want {
			t.Errorf("span %d: user.id %q, want %q", i, got, want)
		}
	}
}
