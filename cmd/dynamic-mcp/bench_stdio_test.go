//go:build unix

package main

import (
	"fmt"
	"os"
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
// and what the processes spent per call, counted from /proc over each
// path's rounds alone (CPU time and context switches, counted as the
// times a thread was put on a CPU, which the machine's load changes far
// less than it changes wall times):
//
//	hub-cpu-µs/call, hub-cs/call        the hub (the shared hub for shared)
//	direct-cpu-µs/call, direct-cs/call  the client (this process) and the
//	                                    minimal fake, over the direct rounds
//	bridge-cs/call                      shared: the bridge, which passed the
//	                                    client's stdin and stdout to the hub
//	                                    and should not take part (0)
//	hub-cpuwait-µs/call,                the time those processes' threads were
//	direct-cpuwait-µs/call              ready to run but waited for a CPU
//	                                    (the kernel's run queue): the
//	                                    machine's load, not the hub's wait.
//	                                    A p99 of tens of ms with as much
//	                                    wait as that is the load's; without
//	                                    it, a stall of the hub's
//
// The audit trail is off: both paths only carry the call.
func BenchmarkStdioOverhead(b *testing.B) {
	direct := startProcess(b, nil, fakeBin, "-minimal")
	direct.initialize("2025-06-18")
	directPath := minimalPath{call: stdioCaller(direct, "echo"), pids: []int{os.Getpid(), direct.cmd.Process.Pid}}
	for _, mode := range []string{"flat", "dynamic"} {
		for _, path := range []string{"standalone", "shared"} {
			// A benchmark that runs others runs once: the hub serves
			// every line under it.
			b.Run(mode+"/"+path, func(b *testing.B) {
				hub := startMinimalHub(b, mode, path, minimalConfig(mode))
				warmUp(b, directPath.call, hub.call)
				for _, inflight := range benchInflight {
					b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
						reportOverhead(b, inflight, directPath, hub)
					})
				}
			})
		}
	}
}

// minimalPath is one way of calling the echo and the processes whose
// spending is counted for it: pids the path's own, bridge the bridge of
// the shared hub (0: none).
type minimalPath struct {
	call   func() error
	pids   []int
	bridge int
}

// minimalConfig serves the minimal fake as group f in mode, audit off.
func minimalConfig(mode string) string {
	return fmt.Sprintf("mode: %s\naudit: { path: off }\ngroups:\n  f: { description: fast, command: %q, args: [\"-minimal\"] }\n", mode, fakeBin)
}

// startMinimalHub starts the hub on cfg, standalone or through the bridge
// to a shared hub, and returns its echo call once the echo answers.
func startMinimalHub(b *testing.B, mode, path, cfg string) minimalPath {
	var c *client
	var s *sharedSetup
	if path == "shared" {
		s = newShared(b, cfg)
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
	if s != nil {
		return minimalPath{call: call, pids: []int{s.hubPID()}, bridge: c.cmd.Process.Pid}
	}
	return minimalPath{call: call, pids: []int{c.cmd.Process.Pid}}
}

// reportOverhead measures b.N calls of direct and of hub, inflight at a
// time, and reports the figures BenchmarkStdioOverhead describes.
func reportOverhead(b *testing.B, inflight int, direct, hub minimalPath) {
	// What each path's processes spent over its own rounds (the bridge:
	// over the hub's), from /proc (useOf).
	pids := [][]int{direct.pids, hub.pids}
	spent := make([]procUse, len(pids))
	var bridge procUse
	s, err := measureRoundsMetered(b.N, inflight, []func() error{direct.call, hub.call}, nil, func(i int) func() {
		start, bridgeStart := useOf(pids[i]...), useOf(hub.bridge)
		return func() {
			spent[i] = spent[i].add(useOf(pids[i]...).sub(start))
			if i == 1 && hub.bridge != 0 {
				bridge = bridge.add(useOf(hub.bridge).sub(bridgeStart))
			}
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	d, h := s[0], s[1]
	d.report(b, "direct")
	h.report(b, "hub")
	for i, who := range []string{"direct", "hub"} {
		b.ReportMetric(micros(spent[i].cpu)/float64(b.N), who+"-cpu-µs/call")
		b.ReportMetric(float64(spent[i].slices)/float64(b.N), who+"-cs/call")
		b.ReportMetric(micros(spent[i].wait)/float64(b.N), who+"-cpuwait-µs/call")
	}
	if hub.bridge != 0 {
		b.ReportMetric(float64(bridge.slices)/float64(b.N), "bridge-cs/call")
	}
	added := h.quantile(0.50) - d.quantile(0.50)
	b.ReportMetric(micros(added), "p50-added-µs")
	b.ReportMetric(float64(added)/float64(d.quantile(0.50)), "added/direct")
	b.ReportMetric(h.perSecond()/d.perSecond(), "tput-ratio")
	b.ReportMetric(0, "ns/op")
}
