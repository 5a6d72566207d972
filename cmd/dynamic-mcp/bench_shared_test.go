//go:build unix

package main

import (
	"testing"
)

// BenchmarkSharedBridge puts a figure on what the bridge of the shared hub
// adds to a call (issue 22: at most 30 µs at p50):
//
//	go test ./cmd/dynamic-mcp -run '^$' -bench SharedBridge -benchtime 3000x
//
// The fake's echo through a standalone hub over stdio, and through `serve`
// as a bridge to the shared hub on the same config: p50/p99 of both and
// what the bridge adds, one call in flight.
func BenchmarkSharedBridge(b *testing.B) {
	direct := startHub(b, flatConfig(), "--log-level", "error")
	direct.initialize("2025-06-18")
	direct.waitFlatTools(fakeTools)
	s := newShared(b, flatConfig())
	// The bridge starts the hub at its own log level: error, as the
	// standalone hub's.
	bridged := startProcess(b, s.env, raceHubBin, "serve", "-c", s.path, "--log-level", "error")
	bridged.initialize("2025-06-18")
	bridged.waitFlatTools(fakeTools)
	directCall, bridgedCall := stdioCaller(direct, "f__echo"), stdioCaller(bridged, "f__echo")
	warmUp(b, directCall, bridgedCall)
	d, h, err := measurePair(b.N, 1, directCall, bridgedCall)
	if err != nil {
		b.Fatal(err)
	}
	d.report(b, "hub")
	h.report(b, "bridge")
	b.ReportMetric(micros(h.quantile(0.50)-d.quantile(0.50)), "p50-added-µs")
	b.ReportMetric(micros(h.quantile(0.99)-d.quantile(0.99)), "p99-added-µs")
	b.ReportMetric(0, "ns/op")
}
