package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/server/health"
	"github.com/dynamic-mcp/dynamic-mcp/server/telemetry"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// scrape GETs url with the bearer token and parses the Prometheus text it
// answers.
func scrape(t *testing.T, url, token string) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s\n%s", resp.Status, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse the scrape: %v\n%s", err, body)
	}
	return fams, string(body)
}

// series is the metric of family name whose labels are exactly labels,
// nil when there is none.
func series(fams map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		for _, l := range m.GetLabel() {
			if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
				continue next
			}
		}
		return m
	}
	return nil
}

// metricsHub is hidingHub (flat mode, group f with a deny rule "fine" for
// echo's text "x") with the metrics observer attached, its /metrics served
// (behind token, as serve --http serves it: TestServeHTTPMetricsAndHealth),
// and a stdio client initialized.
func metricsHub(t *testing.T, token string) (*pipeClient, string) {
	h := hidingHub(t)
	m := telemetry.NewMetrics(h.mgr, telemetry.MetricsOptions{Dropped: h.Sessions().Dropped, Sessions: func() map[string]int {
		n := map[string]int{}
		for _, s := range h.Sessions().Info() {
			n[s.Transport]++
		}
		return n
	}})
	h.Traffic().Observe(m)
	mux := http.NewServeMux()
	mux.Handle("/metrics", bearer(token, m.Handler()))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	c := servePipes(t, h, StdioOptions{})
	c.initialize()
	return c, ts.URL
}

// /metrics, scraped after calls, has the server and client duration
// histograms with the labels of each outcome, the policy decisions, the
// upstream's state and the session; a tool name or method a client
// invents becomes no label value, and the metrics put nothing in the
// params sent upstream.
func TestMetricsAfterCalls(t *testing.T) {
	t.Parallel()
	c, base := metricsHub(t, "tok")
	for id, params := range map[string]string{
		`"ok"`:      `{"name":"f__echo","arguments":{"text":"hi"}}`,
		`"blocked"`: `{"name":"f__echo","arguments":{"text":"x"}}`,
		`"missing"`: `{"name":"f__invented_tool_name","arguments":{}}`,
		`"fail"`:    `{"name":"f__fail","arguments":{}}`,
	} {
		c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}`)
		c.answer(id)
	}
	c.send(`{"jsonrpc":"2.0","id":"odd","method":"invented/method"}`)
	c.answer(`"odd"`)
	c.send(`{"jsonrpc":"2.0","id":"state","method":"tools/call","params":{"name":"f__state"}}`)
	if got := c.answer(`"state"`); strings.Contains(got, `lastMeta`) {
		t.Errorf("with tracing off, a _meta reached the upstream: %s", got)
	}

	if req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil); true {
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("/metrics without the token: %s", resp.Status)
		}
	}
	fams, body := scrape(t, base+"/metrics", "tok")
	const serverOp, clientOp = "mcp_server_operation_duration_seconds", "mcp_client_operation_duration_seconds"
	for _, tc := range []struct {
		name   string
		labels map[string]string
	}{
		{serverOp, map[string]string{"mcp_method_name": "tools/call", "gen_ai_tool_name": "echo", "gen_ai_prompt_name": "", "group": "f",
			"status": "ok", "error_type": "", "network_transport": "pipe"}},
		{serverOp, map[string]string{"mcp_method_name": "tools/call", "gen_ai_tool_name": "echo", "gen_ai_prompt_name": "", "group": "f",
			"status": "blocked", "error_type": "-32001", "network_transport": "pipe"}},
		{serverOp, map[string]string{"mcp_method_name": "tools/call", "gen_ai_tool_name": "_unknown", "gen_ai_prompt_name": "", "group": "",
			"status": "not_found", "error_type": "-32601", "network_transport": "pipe"}},
		{serverOp, map[string]string{"mcp_method_name": "tools/call", "gen_ai_tool_name": "fail", "gen_ai_prompt_name": "", "group": "f",
			"status": "error", "error_type": "-32099", "network_transport": "pipe"}},
		{serverOp, map[string]string{"mcp_method_name": "_OTHER", "gen_ai_tool_name": "", "gen_ai_prompt_name": "", "group": "",
			"status": "not_found", "error_type": "-32601", "network_transport": "pipe"}},
		{serverOp, map[string]string{"mcp_method_name": "initialize", "gen_ai_tool_name": "", "gen_ai_prompt_name": "", "group": "",
			"status": "ok", "error_type": "", "network_transport": "pipe"}},
		{clientOp, map[string]string{"mcp_method_name": "tools/call", "gen_ai_tool_name": "echo", "group": "f", "server": "f",
			"error_type": "", "network_transport": "pipe"}},
		{clientOp, map[string]string{"mcp_method_name": "tools/call", "gen_ai_tool_name": "fail", "group": "f", "server": "f",
			"error_type": "-32099", "network_transport": "pipe"}},
	} {
		m := series(fams, tc.name, tc.labels)
		if m == nil || m.GetHistogram().GetSampleCount() != 1 {
			t.Errorf("%s%v: want 1 sample, got %v", tc.name, tc.labels, m)
		}
	}
	// The blocked call never went upstream: one hop for echo, not two.
	if n := len(fams[clientOp].GetMetric()); n != 3 { // echo, fail, state
		t.Errorf("%d client series, want 3:\n%s", n, body)
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"dynamic_mcp_policy_decisions_total", map[string]string{"group": "f", "rule": "fine", "action": "deny"}, 1},
		{"dynamic_mcp_policy_decisions_total", map[string]string{"group": "f", "rule": "", "action": "allow"}, 3},
		{"dynamic_mcp_upstream_state", map[string]string{"group": "f", "server": "f", "state": "ready"}, 1},
		{"dynamic_mcp_upstream_state", map[string]string{"group": "f", "server": "f", "state": "failed"}, 0},
		{"dynamic_mcp_upstream_restarts_total", map[string]string{"group": "f", "server": "f"}, 0},
		{"dynamic_mcp_sessions", map[string]string{"transport": "stdio"}, 1},
		{"dynamic_mcp_sessions", map[string]string{"transport": "streamable-http"}, 0},
		{"dynamic_mcp_client_notifications_dropped_total", map[string]string{}, 0},
		{"dynamic_mcp_requests_in_flight", map[string]string{}, 0},
	} {
		m := series(fams, tc.name, tc.labels)
		if m == nil {
			t.Errorf("no %s%v", tc.name, tc.labels)
			continue
		}
		if got := m.GetCounter().GetValue() + m.GetGauge().GetValue(); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
	for _, peer := range []string{"client", "upstream"} {
		for _, name := range []string{"dynamic_mcp_received_bytes_total", "dynamic_mcp_sent_bytes_total"} {
			if m := series(fams, name, map[string]string{"peer": peer}); m.GetCounter().GetValue() == 0 {
				t.Errorf("%s{peer=%q} counted nothing", name, peer)
			}
		}
	}
	for _, invented := range []string{"invented_tool_name", "invented/method"} {
		if strings.Contains(body, invented) {
			t.Errorf("%q, which the client invented, became a label value", invented)
		}
	}
}

// Sessions lists the open sessions with what initialize told and the
// requests in flight, and Dropped starts at nothing.
func TestSessionsListsTheClient(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	c := servePipes(t, h, StdioOptions{})
	c.send(initializeMsg)
	c.answer("0")
	got := h.Sessions().Info()
	if len(got) != 1 || got[0].ID != "stdio" || got[0].Transport != "stdio" || got[0].ClientName != "t" || got[0].ClientVersion != "1" ||
		got[0].ProtocolVersion != "2025-06-18" || got[0].Capabilities.Roots == nil {
		b, _ := json.Marshal(got)
		t.Errorf("sessions: %s", b)
	}
	inflight := func(n int) func() bool {
		return func() bool { s := h.Sessions().Info(); return len(s) == 1 && s[0].Inflight == n }
	}
	c.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"f__hang"}}`)
	await.For(t, 15*time.Second, "the call in flight", inflight(1))
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`)
	await.For(t, 15*time.Second, "no call in flight", inflight(0))
	if n := h.Sessions().Dropped(); n != 0 {
		t.Errorf("dropped %d", n)
	}
}

// bearer serves next to requests with token, as the HTTP face's guard
// does (server/mcphttp), and answers every other 401.
func bearer(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// readyz GETs base/readyz, with the token when it is not "", and returns
// the status and the report.
func readyz(t *testing.T, base, token string) (int, health.Report) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/readyz", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep health.Report
	if resp.StatusCode != http.StatusUnauthorized {
		if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
			t.Fatalf("readyz %s: %v", resp.Status, err)
		}
	}
	return resp.StatusCode, rep
}

// /readyz answers 503 while a group is starting and 200 once every enabled
// group has settled, a failed one included; it names states to anyone and
// reasons only to a request with the token, and a wrong token is refused.
func TestReadyzFlipsWhenGroupsSettle(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse("test.yaml", strings.NewReader(fmt.Sprintf(`
state_dir: %q
audit: {path: "off"}
groups:
  good: {description: g, command: %q}
  bad: {description: b, command: %q, args: ["-exit-at-start", "3"]}
  off: {description: o, command: %q, disabled: true}
`, t.TempDir(), fakeBin, fakeBin, fakeBin)))
	if err != nil {
		t.Fatal(err)
	}
	mgr := upstream.New(cfg, testLogger())
	mgr.SetClientCapabilities(mcp.ClientCapabilities{})
	h, err := New(cfg, mgr, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	h.Run()
	t.Cleanup(func() { h.Close(); mgr.Close() })
	mux := http.NewServeMux()
	health.Mount(mux, mgr, func(next http.Handler) http.Handler { return bearer("tok", next) })
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)

	// Nothing started yet: every enabled server is starting.
	if code, rep := readyz(t, ts.URL, ""); code != http.StatusServiceUnavailable || rep.Ready || len(rep.Groups) != 3 ||
		rep.Groups[0].State != "starting" || rep.Groups[2].State != "disabled" {
		t.Errorf("before start: %d %+v", code, rep)
	}
	mgr.Start(context.Background())
	var rep health.Report
	await.For(t, 15*time.Second, "readyz 200", func() bool {
		var code int
		code, rep = readyz(t, ts.URL, "")
		return code == http.StatusOK
	})
	got := map[string]string{}
	for _, g := range rep.Groups {
		got[g.Name] = g.State
		if len(g.Servers) != 1 || g.Servers[0].Error != "" {
			t.Errorf("public report of %s: %+v", g.Name, g.Servers)
		}
	}
	if !rep.Ready || got["good"] != "ready" || got["bad"] != "failed" || got["off"] != "disabled" {
		t.Errorf("settled: %+v", rep)
	}
	code, rep := readyz(t, ts.URL, "tok")
	if code != http.StatusOK || len(rep.Groups) != 3 || rep.Groups[1].Servers[0].Error == "" || rep.Groups[0].Servers[0].Protocol == "" {
		t.Errorf("with the token: %d %+v", code, rep)
	}
	if code, _ := readyz(t, ts.URL, "wrong"); code != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d", code)
	}
}

// BenchmarkStdioToolCallMetrics is BenchmarkStdioToolCall with the metrics
// observer attached: the difference is what metrics cost a call.
func BenchmarkStdioToolCallMetrics(b *testing.B) {
	h := fakeHubB(b)
	h.Traffic().Observe(telemetry.NewMetrics(h.mgr, telemetry.MetricsOptions{}))
	benchToolCalls(b, h)
}

// BenchmarkStdioToolCallTraced is BenchmarkStdioToolCall with the tracer
// attached, its spans exported to nowhere: what tracing costs a call.
func BenchmarkStdioToolCallTraced(b *testing.B) {
	h := fakeHubB(b)
	tracer := telemetry.NewTracer(tracetest.NewNoopExporter(), resource.Empty())
	b.Cleanup(func() { tracer.Close() })
	h.Traffic().Observe(tracer)
	benchToolCalls(b, h)
}
