package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkToolCallLatency measures a trivial tool call (the fake's echo)
// made directly against the upstream and made through the hub binary, with
// 1 and with 32 calls in flight, and reports p50 and p99 of both and the
// latency the hub adds. Run: go test ./cmd/dynamic-mcp -run '^$' -bench ToolCallLatency -benchtime 20000x
//
// With audit=on every call also appends a line to the audit trail, as the
// default configuration does; audit=off measures the proxying alone.
func BenchmarkToolCallLatency(b *testing.B) {
	for _, bc := range []struct {
		inflight int
		audit    string
	}{{1, "off"}, {32, "off"}, {1, "on"}, {32, "on"}} {
		inflight := bc.inflight
		auditPath := "off"
		if bc.audit == "on" {
			auditPath = filepath.Join(b.TempDir(), "audit.jsonl")
		}
		b.Run(fmt.Sprintf("inflight=%d/audit=%s", inflight, bc.audit), func(b *testing.B) {
			direct := startProcess(b, nil, fakeBin)
			direct.initialize("2025-06-18")
			hub := startHub(b, fmt.Sprintf("mode: flat\naudit: { path: %s }\ngroups:\n  f: { description: fast, command: %q }\n", auditPath, fakeBin), "--log-level", "error")
			hub.initialize("2025-06-18")
			hub.waitFlatTools(fakeTools)
			// Warm both paths up before measuring.
			measure(b, direct, "echo", inflight, 200)
			measure(b, hub, "f__echo", inflight, 200)

			b.ResetTimer()
			d := measure(b, direct, "echo", inflight, b.N)
			h := measure(b, hub, "f__echo", inflight, b.N)
			b.StopTimer()
			for _, q := range []struct {
				name string
				p    float64
			}{{"p50", 0.50}, {"p99", 0.99}} {
				dq, hq := quantile(d, q.p), quantile(h, q.p)
				b.ReportMetric(micros(dq), q.name+"-direct-µs")
				b.ReportMetric(micros(hq), q.name+"-hub-µs")
				b.ReportMetric(micros(hq-dq), q.name+"-added-µs")
			}
		})
	}
}

// measure makes n calls of tool on c, inflight at a time, and returns each
// call's latency, sorted.
func measure(b *testing.B, c *client, tool string, inflight, n int) []time.Duration {
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range inflight {
		wg.Go(func() {
			for i := range next {
				start := time.Now()
				c.call("tools/call", map[string]any{"name": tool, "arguments": map[string]any{"text": "x"}})
				lat[i] = time.Since(start)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	slices.Sort(lat)
	return lat
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
