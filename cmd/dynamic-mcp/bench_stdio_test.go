//go:build unix

package main

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkStdioOverhead puts figures on what the hub adds to a stdio
// call (issue 33) against an upstream that costs next to nothing, the
// fake's -minimal echo, so that the hub's own cost is not hidden behind a
// slow upstream's:
//
//	go test ./cmd/dynamic-mcp -run '^$' -bench StdioOverhead -benchtime 2000x
//
// Each line is a mode (flat, dynamic), a way the client reaches the hub
// (standalone: `serve --standalone`; shared: `serve -c FILE`, the bridge
// to the shared hub, as a client starts it) and the calls in flight (1,
// 32). It measures the echo called directly on the minimal fake and
// through the hub, in alternating rounds, with the same client: p50/p99
// and calls/s of both, and
//
//	p50-added-µs     hub p50 - direct p50
//	added/direct     p50-added-µs / direct p50 (target: at most 1, at 1 in flight)
//	tput-ratio       hub calls/s / direct calls/s (target: at least 0.5, at 32)
//
// The audit trail is off: both paths only carry the call.
func BenchmarkStdioOverhead(b *testing.B) {
	direct := startProcess(b, nil, fakeBin, "-minimal")
	direct.initialize("2025-06-18")
	directCall := stdioCaller(direct, "echo")
	for _, mode := range []string{"flat", "dynamic"} {
		for _, path := range []string{"standalone", "shared"} {
			// A benchmark that runs others runs once: the hub serves
			// every line under it.
			b.Run(mode+"/"+path, func(b *testing.B) {
				hubCall := startMinimalHub(b, mode, path, minimalConfig(mode))
				warmUp(b, directCall, hubCall)
				for _, inflight := range benchInflight {
					b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
						reportOverhead(b, inflight, directCall, hubCall)
					})
				}
			})
		}
	}
}

// minimalConfig serves the minimal fake as group f in mode, audit off.
func minimalConfig(mode string) string {
	return fmt.Sprintf("mode: %s\naudit: { path: off }\ngroups:\n  f: { description: fast, command: %q, args: [\"-minimal\"] }\n", mode, fakeBin)
}

// startMinimalHub starts the hub on cfg, standalone or through the bridge
// to a shared hub, and returns its echo call once the echo answers.
func startMinimalHub(b *testing.B, mode, path, cfg string) func() error {
	var c *client
	if path == "shared" {
		s := newShared(b, cfg)
		c = startProcess(b, s.env, hubBin, "serve", "-c", s.path, "--log-level", "error")
	} else {
		c = startHub(b, cfg, "--standalone", "--log-level", "error")
	}
	c.initialize("2025-06-18")
	call := stdioCaller(c, "f__echo")
	if mode == "dynamic" {
		call = stdioToolCaller(c, "call_dynamic_tool", map[string]any{"group": "f", "name": "echo", "args": map[string]any{"text": "x"}})
	}
	waitFor(b, 30*time.Second, "the echo through the hub", func() bool { return call() == nil })
	return call
}

// reportOverhead measures b.N calls of direct and of hub, inflight at a
// time, and reports the figures BenchmarkStdioOverhead describes.
func reportOverhead(b *testing.B, inflight int, direct, hub func() error) {
	d, h, err := measurePair(b.N, inflight, direct, hub)
	if err != nil {
		b.Fatal(err)
	}
	d.report(b, "direct")
	h.report(b, "hub")
	added := h.quantile(0.50) - d.quantile(0.50)
	b.ReportMetric(micros(added), "p50-added-µs")
	b.ReportMetric(float64(added)/float64(d.quantile(0.50)), "added/direct")
	b.ReportMetric(h.perSecond()/d.perSecond(), "tput-ratio")
	b.ReportMetric(0, "ns/op")
}
