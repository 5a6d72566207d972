package main

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkToolCallLatency measures a trivial tool call (the fake's echo)
// made directly against the upstream and made through the hub binary, with
// 1 and with 32 calls in flight, and reports p50 and p99 of both and the
// latency the hub adds. Run: go test ./cmd/dynamic-mcp -run '^$' -bench ToolCallLatency
func BenchmarkToolCallLatency(b *testing.B) {
	for _, inflight := range []int{1, 32} {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			direct := startProcess(b, nil, fakeBin)
			direct.initialize("2025-06-18")
			hub := startHub(b, fmt.Sprintf("mode: flat\ngroups:\n  f: { description: fast, command: %q }\n", fakeBin), "--log-level", "error")
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
