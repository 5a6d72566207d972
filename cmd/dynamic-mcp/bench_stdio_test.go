//go:build unix

package main

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
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
// With DYNAMIC_MCP_BENCH_BASE naming another build of the hub (say main's,
// built with go build ./cmd/dynamic-mcp), each line also measures that
// build, reached the same way, in the same rounds, as "base":
//
//	p50-base-µs, base-calls/s, base-cpu-µs/call, base-cs/call, ...
//	hub/base-cpu-ratio, hub/base-cs-ratio   this build's spending a call
//	                                        over the base's (below 1: cheaper)
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
				hub := startMinimalHub(b, hubBin, mode, path, minimalConfig(mode))
				calls := []func() error{directPath.call, hub.call}
				var base *minimalPath
				if bin := os.Getenv(baseEnvVar); bin != "" {
					p := startMinimalHub(b, bin, mode, path, minimalConfig(mode))
					base = &p
					calls = append(calls, base.call)
				}
				warmUp(b, calls...)
				for _, inflight := range benchInflight {
					b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
						reportOverhead(b, inflight, directPath, hub, base)
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

// startMinimalHub starts the hub binary bin (hubBin, or a base build) on
// cfg, standalone or through the bridge to a shared hub of its own, and
// returns its echo call once the echo answers.
func startMinimalHub(b *testing.B, bin, mode, path, cfg string) minimalPath {
	var c *client
	var s *sharedSetup
	if path == "shared" {
		s = newShared(b, cfg)
		c = startProcess(b, s.env, bin, "serve", "-c", s.path, "--log-level", "error")
	} else {
		c = startProcess(b, []string{"DYNAMIC_MCP_HOME=" + b.TempDir()}, bin, "serve", "-c", writeConfig(b, cfg), "--standalone", "--log-level", "error")
	}
	c.initialize("2025-06-18")
	call := stdioCaller(c, "f__echo")
	if mode == "dynamic" {
		call = stdioToolCaller(c, "call_dynamic_tool", map[string]any{"group": "f", "name": "echo", "args": map[string]any{"text": "x"}})
	}
	await.Costly(b, 30*time.Second, "the echo through the hub", func() bool { return call() == nil })
	if s != nil {
		return minimalPath{call: call, pids: []int{s.hubPID()}, bridge: c.cmd.Process.Pid}
	}
	return minimalPath{call: call, pids: []int{c.cmd.Process.Pid}}
}

// reportOverhead measures b.N calls of direct, of hub and of base (nil:
// none), inflight at a time, and reports the figures
// BenchmarkStdioOverhead describes.
func reportOverhead(b *testing.B, inflight int, direct, hub minimalPath, base *minimalPath) {
	// What each path's processes spent over its own rounds (the bridge:
	// over the hub's), from /proc (useOf).
	paths := []minimalPath{direct, hub}
	if base != nil {
		paths = append(paths, *base)
	}
	pids := make([][]int, len(paths))
	calls := make([]func() error, len(paths))
	for i, p := range paths {
		pids[i], calls[i] = p.pids, p.call
	}
	spent := make([]procUse, len(pids))
	var bridge procUse
	s, err := measureRoundsMetered(b.N, inflight, calls, nil, func(i int) func() {
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
	if base != nil {
		s[2].report(b, "base")
		b.ReportMetric(micros(spent[2].cpu)/float64(b.N), "base-cpu-µs/call")
		b.ReportMetric(float64(spent[2].slices)/float64(b.N), "base-cs/call")
		b.ReportMetric(micros(spent[2].wait)/float64(b.N), "base-cpuwait-µs/call")
		b.ReportMetric(float64(spent[1].cpu)/float64(spent[2].cpu), "hub/base-cpu-ratio")
		b.ReportMetric(float64(spent[1].slices)/float64(spent[2].slices), "hub/base-cs-ratio")
	}
	added := h.quantile(0.50) - d.quantile(0.50)
	b.ReportMetric(micros(added), "p50-added-µs")
	b.ReportMetric(float64(added)/float64(d.quantile(0.50)), "added/direct")
	b.ReportMetric(h.perSecond()/d.perSecond(), "tput-ratio")
	b.ReportMetric(0, "ns/op")
}
