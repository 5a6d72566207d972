//go:build linux

package main

import (
	"fmt"
	"testing"
)

// BenchmarkHeapGoal puts figures on the collector's goal a desktop hub
// runs at (gcpercent.go: GOGC=75 where the user set none), against Go's
// default and a lower one:
//
//	go test ./cmd/dynamic-mcp -run '^$' -bench HeapGoal -benchtime 1x
//
// It builds the hub as a user would and starts three standalone hubs on
// the fake over stdio, with GOGC=100, 75 and 50 (a GOGC set by the user
// is honoured, so each runs at its own), and makes 6,000 calls of the
// echo on each (b.N is not used), one at a time, the hubs taking turns
// in rounds, their order rotating, so that the machine's load falls on
// all three alike. For each GOGC N:
//
//	gogcN-anon-MB       the hub's anonymous memory right after the calls
//	                    (heap, stacks, the runtime's own), from smaps_rollup
//	gogcN-rss-MB        its resident memory then
//	gogcN-cpu-µs/call   the CPU time of its threads a call, from /proc
//	gogcN/100-cpu       that over GOGC=100's in the same rounds: what the
//	                    lower goal costs on every call
//
// The live heap of a hub with one upstream is about 1 MB, so the heap's
// size is the collector's minimum goal, 4 MB x GOGC/100: what a call
// allocates decides only how often it collects, which the CPU a call
// shows. On a loaded machine the CPU times scatter; read the ratio.
func BenchmarkHeapGoal(b *testing.B) {
	const n = 6000
	bin := buildForBench(b, ".")
	path := writeConfig(b, flatConfig())
	percents := []int{100, 75, 50}
	calls := make([]func() error, len(percents))
	meters := make([]procMeter, len(percents))
	for i, p := range percents {
		env := []string{"DYNAMIC_MCP_HOME=" + b.TempDir(), fmt.Sprintf("GOGC=%d", p)}
		c := startProcess(b, env, bin, "serve", "--standalone", "-c", path, "--log-level", "error")
		c.initialize("2025-06-18")
		c.waitFlatTools(fakeTools)
		calls[i] = stdioCaller(c, "f__echo")
		meters[i] = procMeter{pid: c.cmd.Process.Pid}
	}
	// The first calls compile the echo's schema; a warm-up keeps that
	// out of the CPU counted, not out of the memory (a hub holds it).
	warmUp(b, calls...)
	// The hubs take turns in rounds; the order of the turns rotates, so
	// that no hub always follows the same one.
	s := make([]sample, len(calls))
	for r := range calls {
		order := make([]int, len(calls))
		for j := range order {
			order[j] = (r + j) % len(calls)
		}
		rc, rm := make([]func() error, len(calls)), make([]procMeter, len(calls))
		for j, i := range order {
			rc[j], rm[j] = calls[i], meters[i]
		}
		got, err := measureRoundsMetered(n/len(calls), 1, rc, rm, nil)
		if err != nil {
			b.Fatal(err)
		}
		for j, i := range order {
			s[i].use = s[i].use.add(got[j].use)
			s[i].lat = append(s[i].lat, got[j].lat...)
		}
	}
	base, _, _ := s[0].perCall()
	for i, p := range percents {
		m := smapsRollup(b, meters[i].pid)
		cpu, _, _ := s[i].perCall()
		b.ReportMetric(m.mb("Anonymous"), fmt.Sprintf("gogc%d-anon-MB", p))
		b.ReportMetric(m.mb("Rss"), fmt.Sprintf("gogc%d-rss-MB", p))
		b.ReportMetric(cpu, fmt.Sprintf("gogc%d-cpu-µs/call", p))
		if p != 100 && base > 0 {
			b.ReportMetric(cpu/base, fmt.Sprintf("gogc%d/100-cpu", p))
		}
	}
	b.ReportMetric(0, "ns/op")
}
