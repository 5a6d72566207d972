package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The built hub over HTTP: a rule rate: 3/minute lets three calls
// through and refuses the 4th -32001 with retryAfter in its data, and
// /metrics counts it by rule, with the counters kept.
func TestServeRateLimit(t *testing.T) {
	t.Parallel()
	base, _ := startHTTPHub(t, fmt.Sprintf(`mode: flat
groups:
  f:
    description: fake
    command: %q
    policy:
      - { name: echo-rate, action: allow, tool: echo, rate: 3/minute }
`, fakeBin))
	c := httpClient(t, base, nil)
	c.initialize("2025-06-18")
	c.waitFlatTools(fakeTools)
	echo := map[string]any{"name": "f__echo", "arguments": map[string]any{"text": "loop"}}
	for i := 1; i <= 3; i++ {
		if text, isErr := toolText(t, c.call("tools/call", echo)); text != "loop" || isErr {
			t.Fatalf("call %d: %q %v", i, text, isErr)
		}
	}
	_, rpcErr := c.request("tools/call", echo)
	if rpcErr == nil {
		t.Fatal("the 4th call within a minute went through")
	}
	data, _ := rpcErr.Data.(map[string]any)
	retry, _ := data["retryAfter"].(float64)
	if rpcErr.Code != -32001 || data["rule"] != "echo-rate" || data["action"] != "rate" || retry < 1 || retry > 20 ||
		!strings.Contains(rpcErr.Message, "Rate limit 3/minute per session of rule echo-rate exceeded; retry after") {
		t.Errorf("the 4th call: %d %q %v", rpcErr.Code, rpcErr.Message, rpcErr.Data)
	}

	code, body := get(t, base+"/metrics", map[string]string{"Authorization": "Bearer " + testToken})
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	limited := fams["dynamic_mcp_rate_limited_total"].GetMetric()
	if len(limited) != 1 || limited[0].GetCounter().GetValue() != 1 || !strings.Contains(limited[0].String(), `value:"echo-rate"`) {
		t.Errorf("dynamic_mcp_rate_limited_total: %v", limited)
	}
	if b := fams["dynamic_mcp_rate_buckets"].GetMetric(); len(b) != 1 || b[0].GetGauge().GetValue() != 1 {
		t.Errorf("dynamic_mcp_rate_buckets: %v", b)
	}
	if fams["dynamic_mcp_rate_buckets_evicted_total"] == nil {
		t.Error("no dynamic_mcp_rate_buckets_evicted_total")
	}
}

// The official TypeScript SDK client (testdata/sdkclient/ratelimit.mjs)
// over stdio: the 4th call within a minute of a rate: 3/minute rule is
// refused with retryAfter in the error's data; over a then: prompt rule's
// rate the client is asked through its form elicitation, and its accept
// lets the call through, its decline refuses it.
func TestSDKClientRateLimit(t *testing.T) {
	t.Parallel()
	npmTestTool(t, "@modelcontextprotocol", "sdk", "package.json")
	cfg := writeConfig(t, fmt.Sprintf(`mode: flat
groups:
  f:
    description: fake
    command: %q
    policy:
      - { name: echo-rate, action: allow, tool: echo, args: { text: "deny*" }, rate: 3/minute }
      - { name: ask-rate, action: allow, tool: echo, args: { text: "ask*" }, rate: 1/minute, then: prompt }
`, fakeBin))
	hub, _ := json.Marshal([]string{hubBin, "serve", "--standalone", "-c", cfg})
	runSDKClient(t, []string{filepath.Join(repoDir, "testdata", "sdkclient", "ratelimit.mjs"), "--hub", string(hub)})
}
