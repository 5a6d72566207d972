package telemetry

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

var updateGolden = flag.Bool("update", false, "write testdata/metrics.*.golden from this build")

// goldenMetrics is a Metrics with every option set and some traffic of
// each kind counted, label values that need escaping among them.
func goldenMetrics(t *testing.T) *Metrics {
	cfg := &config.Config{StateDir: t.TempDir(), Groups: []*config.Group{
		{Name: "fs", Servers: []*config.Server{{Name: "files", Group: "fs", Transport: config.TransportStdio, Command: "true"}}},
		{Name: "w\"e\\b\n", Servers: []*config.Server{{Name: "web", Group: "w\"e\\b\n", URL: "http://127.0.0.1:1/mcp"}}},
	}}
	m := NewMetrics(upstream.New(cfg, slog.New(slog.DiscardHandler)), MetricsOptions{
		Sessions:  func() map[string]int { return map[string]int{"stdio": 2, "websocket": 1} },
		Callers:   func() (map[string]int, int) { return map[string]int{"jwt": 3, "odd": 1}, 2 },
		Dropped:   func() uint64 { return 7 },
		Panics:    func() uint64 { return 1 },
		AuditLost: func() uint64 { return 12345678 },
		RateLimited: func() map[string]map[string]uint64 {
			return map[string]map[string]uint64{"fs": {"b": 2, "a\"q": 1}, "": {"policy[0]": 4}}
		},
		RateBuckets: func() (int, uint64) { return 3, 1 },
		Results:     func() (uint64, int, int, uint64) { return 1, 2, 1 << 20, 0 },
	})
	ctx := context.Background()
	for i, d := range []time.Duration{0, 5 * time.Millisecond, 10 * time.Millisecond, 333 * time.Millisecond, time.Second, 400 * time.Second} {
		c := &traffic.Call{Method: "tools/call", Group: "fs", Target: "read", Transport: "stdio", Status: traffic.StatusOK,
			Params: make([]byte, 10*i), Result: make([]byte, 1000*i), Duration: d, Rule: "r\\1", Action: "allow"}
		ctx := m.CallStarted(ctx, c)
		h := &traffic.Hop{Call: c, Group: "fs", Server: "files", Transport: "stdio", Method: "tools/call", Params: make([]byte, 7), Duration: d / 2}
		m.HopStarted(ctx, h)
		m.HopEnded(ctx, h)
		m.CallEnded(ctx, c)
	}
	m.CallStarted(ctx, &traffic.Call{Method: "tools/list", Transport: "streamable-http"})
	m.CallEnded(ctx, &traffic.Call{Method: "nope/nope", Transport: "sse", Status: traffic.StatusError, Err: errors.New("x"), Duration: 1500 * time.Microsecond})
	m.Message(ctx, &traffic.Message{Direction: traffic.FromUpstream, Method: "notifications/progress", Params: make([]byte, 33)})
	m.Message(ctx, &traffic.Message{Direction: traffic.FromUpstream, Method: "sampling/createMessage", Request: true, Params: make([]byte, 5), Result: make([]byte, 9)})
	m.Message(ctx, &traffic.Message{Direction: traffic.FromClient, Method: "notifications/cancelled", Params: make([]byte, 2)})
	return m
}

// scrape returns the headers and body of a scrape with the Accept given,
// without the families of the Go runtime and the process, whose values
// change from scrape to scrape.
func scrape(t *testing.T, h http.Handler, accept string) (http.Header, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	h.ServeHTTP(rec, req)
	var b strings.Builder
	s := bufio.NewScanner(rec.Body)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		if l := s.Text(); !isRuntimeLine(l) {
			b.WriteString(l + "\n")
		}
	}
	return rec.Header(), b.String()
}

// isRuntimeLine is a line of a go_* or process_* family.
func isRuntimeLine(l string) bool {
	for _, p := range []string{"go_", "process_"} {
		for _, c := range []string{"", "# HELP ", "# TYPE ", "# UNIT "} {
			if strings.HasPrefix(l, c+p) {
				return true
			}
		}
	}
	return false
}

const (
	acceptPrometheus = "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
)

// The metrics of the hub are written byte for byte as client_golang's
// handler wrote them (testdata/metrics.*.golden, written by it before it
// was replaced), in the text format and in OpenMetrics, which Prometheus
// asks for first.
func TestMetricsGolden(t *testing.T) {
	h := goldenMetrics(t).Handler()
	for _, c := range []struct{ file, accept, contentType string }{
		{"metrics.text.golden", "", "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"},
		{"metrics.openmetrics.golden", acceptPrometheus, "application/openmetrics-text; version=1.0.0; charset=utf-8; escaping=underscores"},
	} {
		hdr, got := scrape(t, h, c.accept)
		if ct := hdr.Get("Content-Type"); ct != c.contentType {
			t.Errorf("%s: Content-Type %q, want %q", c.file, ct, c.contentType)
		}
		path := "testdata/" + c.file
		if *updateGolden {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s differs:\n%s", c.file, lineDiff(string(want), got))
		}
	}
}

// lineDiff lists the lines of want missing from got and the other way.
func lineDiff(want, got string) string {
	var b strings.Builder
	in := func(s, l string) bool { return strings.Contains("\n"+s, "\n"+l+"\n") }
	for l := range strings.SplitSeq(want, "\n") {
		if l != "" && !in(got, l) {
			b.WriteString("- " + l + "\n")
		}
	}
	for l := range strings.SplitSeq(got, "\n") {
		if l != "" && !in(want, l) {
			b.WriteString("+ " + l + "\n")
		}
	}
	if b.Len() == 0 {
		return "(the same lines in another order)"
	}
	return b.String()
}
