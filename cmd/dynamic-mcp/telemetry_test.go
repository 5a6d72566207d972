package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// get GETs url with headers and returns the status and body.
func get(t *testing.T, url string, headers map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// serve --http has /metrics behind the token, with the duration of a
// call made over HTTP, and /healthz and /readyz for anyone.
func TestServeHTTPMetricsAndHealth(t *testing.T) {
	t.Parallel()
	base, _ := startHTTPHub(t, fmt.Sprintf("mode: flat\ngroups:\n  f: { description: fake, command: %q }\n", fakeBin))
	c := httpClient(t, base, nil)
	c.initialize("2025-06-18")
	c.waitFlatTools(fakeTools)
	if text, isErr := toolText(t, c.call("tools/call", map[string]any{"name": "f__echo", "arguments": map[string]any{"text": "hi"}})); text != "hi" || isErr {
		t.Fatalf("echo: %q %v", text, isErr)
	}
	if code, _ := get(t, base+"/metrics", nil); code != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: %d", code)
	}
	code, body := get(t, base+"/metrics", map[string]string{"Authorization": "Bearer " + testToken})
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	var echoes uint64
	for _, m := range fams["mcp_server_operation_duration_seconds"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["mcp_method_name"] == "tools/call" && labels["gen_ai_tool_name"] == "echo" && labels["group"] == "f" &&
			labels["status"] == "ok" && labels["network_transport"] == "tcp" {
			echoes += m.GetHistogram().GetSampleCount()
		}
	}
	if echoes != 1 {
		t.Errorf("%d echo calls in the server histogram, want 1:\n%s", echoes, body)
	}
	for _, name := range []string{"mcp_client_operation_duration_seconds", "dynamic_mcp_upstream_state", "dynamic_mcp_sessions", "go_goroutines",
		"dynamic_mcp_panics_total", "dynamic_mcp_audit_records_lost_total"} {
		if fams[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	if code, body := get(t, base+"/healthz", nil); code != http.StatusOK {
		t.Errorf("/healthz: %d %s", code, body)
	}
	if code, body := get(t, base+"/readyz", nil); code != http.StatusOK || !strings.Contains(body, `"ready":true`) ||
		!strings.Contains(body, `"components":[{"name":"audit","state":"ok"},{"name":"http","state":"ok"}]`) {
		t.Errorf("/readyz: %d %s", code, body)
	}
	// On a loopback listener the probes are behind the Host and Origin
	// checks: a page whose name was rebound to 127.0.0.1 cannot read them.
	for _, probe := range []string{"/healthz", "/readyz"} {
		for _, bad := range []struct{ host, origin string }{{"rebind.example", ""}, {"", "http://evil.example"}} {
			req, _ := http.NewRequest(http.MethodGet, base+probe, nil)
			if bad.host != "" {
				req.Host = bad.host
			}
			if bad.origin != "" {
				req.Header.Set("Origin", bad.origin)
			}
			resp, err := testClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || strings.Contains(string(body), `"f"`) {
				t.Errorf("%s with Host %q, Origin %q: %d %.200s", probe, bad.host, bad.origin, resp.StatusCode, body)
			}
		}
	}
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, the hub (here over stdio) sends
// the spans of a call to the collector, the last ones as it exits.
func TestServeExportsTraces(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var names []string
	traceIDs := map[string]bool{}
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range msg.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					names = append(names, s.GetName()+" "+tracepb.Span_SpanKind_name[int32(s.GetKind())])
					traceIDs[hex.EncodeToString(s.GetTraceId())] = true
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	c, cmd := startHubProcess(t, fmt.Sprintf("mode: flat\ngroups:\n  f: { description: fake, command: %q }\n", fakeBin), "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL)
	c.initialize("2025-06-18")
	c.waitFlatTools(fakeTools)
	const traceID = "0af7651916cd43dd8448eb211c80319c"
	c.call("tools/call", map[string]any{"name": "f__echo", "arguments": map[string]any{"text": "hi"},
		"_meta": map[string]any{"traceparent": "00-" + traceID + "-b7ad6b7169203331-01"}})
	c.tr.Close() // the hub's stdin closes: it stops, sending the spans it holds
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the hub exited with %v", err)
		}
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("the hub did not exit once its stdin closed")
	}
	mu.Lock()
	defer mu.Unlock()
	got := strings.Join(names, "\n")
	if !strings.Contains(got, "tools/call f__echo SPAN_KIND_SERVER") || !strings.Contains(got, "tools/call echo SPAN_KIND_CLIENT") || !traceIDs[traceID] {
		t.Errorf("spans received:\n%s\ntraces %v", got, traceIDs)
	}
}
