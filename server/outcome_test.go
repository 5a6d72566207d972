package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/inspect"
	"github.com/dynamic-mcp/dynamic-mcp/server/telemetry"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// spanKeeper is a span exporter that keeps what it is sent.
type spanKeeper struct {
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

func (k *spanKeeper) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.spans = append(k.spans, spans...)
	return nil
}

func (k *spanKeeper) Shutdown(context.Context) error { return nil }

// serverSpans are the SERVER spans kept, by their request id.
func (k *spanKeeper) serverSpans() map[string]sdktrace.ReadOnlySpan {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range k.spans {
		for _, a := range s.Attributes() {
			if a.Key == "jsonrpc.request.id" {
				out[a.Value.AsString()] = s
			}
		}
	}
	return out
}

func spanAttr(s sdktrace.ReadOnlySpan, key attribute.Key) string {
	for _, a := range s.Attributes() {
		if a.Key == key {
			return a.Value.String()
		}
	}
	return ""
}

// How a request ended is decided once: the audit line, the inspector's
// row, the metrics' status and error_type labels and the trace's status
// say the same for each outcome a user can meet (a result, a tool error
// result, a JSON-RPC error, a policy block, a tool that does not exist, a
// call the client cancelled).
func TestOutcomeAgreesEverywhere(t *testing.T) {
	t.Parallel()
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	yaml := strings.Replace(flatFakeYAML(t.TempDir(), "call_timeout: 5s", `    policy:
      - {name: no-x, action: deny, tool: "echo", args: {text: "x"}}
`), `audit: {path: "off"}`, `audit: {path: "`+auditPath+`"}`, 1)
	h, mgr := runHub(t, yaml, true)
	await.For(t, 10*time.Second, "the upstream", func() bool { return mgr.Servers()[0].Status().State == upstream.StateReady })
	await.For(t, 5*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__echo"]; return ok })

	metrics := telemetry.NewMetrics(h.mgr, telemetry.MetricsOptions{})
	keeper := &spanKeeper{}
	tracer := telemetry.NewTracer(keeper, resource.Empty())
	insp := inspect.New(inspect.Options{Upstreams: h.mgr, ToolsList: h.ToolsListFor})
	h.Traffic().Observe(traffic.Tee(metrics, tracer, insp))
	metricsAPI, inspectAPI := httptest.NewServer(metrics.Handler()), httptest.NewServer(insp.API())
	t.Cleanup(func() { h.Traffic().Observe(nil); insp.Close(); metricsAPI.Close(); inspectAPI.Close() })

	c := servePipes(t, h, StdioOptions{})
	c.initialize()

	cases := []struct {
		id, params string
		status     traffic.Status
		tool       string // the metrics' gen_ai_tool_name
		errorType  string
	}{
		{"ok", `{"name":"f__echo","arguments":{"text":"hi"}}`, traffic.StatusOK, "echo", ""},
		{"tool_error", `{"name":"f__weird"}`, traffic.StatusToolError, "weird", "tool_error"},
		{"error", `{"name":"f__fail"}`, traffic.StatusError, "fail", "-32099"},
		{"blocked", `{"name":"f__echo","arguments":{"text":"x"}}`, traffic.StatusBlocked, "echo", "-32001"},
		{"not_found", `{"name":"f__nope"}`, traffic.StatusNotFound, "_unknown", "-32601"},
		{"cancelled", `{"name":"f__hang"}`, traffic.StatusCancelled, "hang", "cancelled"},
	}
	for _, tc := range cases {
		c.send(`{"jsonrpc":"2.0","id":"` + tc.id + `","method":"tools/call","params":` + tc.params + `}`)
		if tc.status != traffic.StatusCancelled {
			c.answer(`"` + tc.id + `"`)
		}
	}
	// The hanging call is in flight once the upstream has it: cancel it
	// then, and wait for its record (a cancelled call gets no answer).
	await.For(t, 5*time.Second, "the hanging call upstream", func() bool {
		for _, s := range h.Sessions().Info() {
			if s.Inflight > 0 {
				return true
			}
		}
		return false
	})
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"cancelled"}}`)
	var audit []string // the outcomes, in the order of the calls: each is written before it is answered
	await.For(t, 5*time.Second, "an audit line for each call", func() bool {
		f, err := os.Open(auditPath)
		if err != nil {
			return false
		}
		defer f.Close()
		audit = audit[:0]
		for sc := bufio.NewScanner(f); sc.Scan(); {
			var rec auditRecord
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatal(err)
			}
			audit = append(audit, rec.Outcome)
		}
		return len(audit) == len(cases)
	})
	// The audit line is written as a call is answered; the observers hear
	// of its end on their own (a cancelled call's came just after its line
	// in a stress run, and its span was not yet ended when the tracer was
	// closed). The inspector hears last (the Tee's order): once its row of
	// each call is no longer pending, the tracer has ended each call's
	// span and may be closed (flushing them).
	rows := map[string]string{} // request id -> status
	await.For(t, time.Minute, "the inspector's row of each call, ended", func() bool {
		resp, err := testClient.Get(inspectAPI.URL + inspect.Prefix + "api/export")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		clear(rows)
		for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
			var r struct{ ID, Status string }
			mustJSON(t, sc.Text(), &r)
			rows[r.ID] = r.Status
		}
		for _, tc := range cases {
			if st := rows[`"`+tc.id+`"`]; st == "" || st == "pending" {
				return false
			}
		}
		return true
	})
	if err := tracer.Close(); err != nil {
		t.Fatal(err)
	}

	fams, body := scrape(t, metricsAPI.URL, "")
	spans := keeper.serverSpans()

	for i, tc := range cases {
		if got := audit[i]; got != string(tc.status) {
			t.Errorf("%s: audit outcome %q", tc.id, got)
		}
		if got := rows[`"`+tc.id+`"`]; got != string(tc.status) {
			t.Errorf("%s: inspector status %q", tc.id, got)
		}
		group := "f"
		if tc.status == traffic.StatusNotFound {
			group = ""
		}
		if m := series(fams, "mcp_server_operation_duration_seconds", map[string]string{"mcp_method_name": "tools/call", "gen_ai_tool_name": tc.tool,
			"gen_ai_prompt_name": "", "group": group, "status": string(tc.status), "error_type": tc.errorType, "network_transport": "pipe"}); m == nil {
			t.Errorf("%s: no metric with status %s and error_type %q:\n%s", tc.id, tc.status, tc.errorType, body)
		}
		span, ok := spans[tc.id]
		if !ok {
			t.Errorf("%s: no span", tc.id)
			continue
		}
		wantCode := codes.Error
		if tc.status == traffic.StatusOK {
			wantCode = codes.Unset
		}
		if got := spanAttr(span, "dynamic_mcp.status"); got != string(tc.status) || span.Status().Code != wantCode ||
			spanAttr(span, "error.type") != tc.errorType {
			t.Errorf("%s: span status %q, code %v, error.type %q", tc.id, got, span.Status().Code, spanAttr(span, "error.type"))
		}
	}
}
