package main

import (
	"os"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/testdata/procuse"
)

// procMeter counts what a benchmarked process spends, which the machine's
// load changes little, unlike wall time: the CPU time of its threads and
// how often they were put on a CPU (each a wake-up, most of them a
// goroutine woken by another), and the same for its children (a server's
// stdio upstream). Linux only: elsewhere it counts nothing.
type procMeter struct{ pid int }

// procUse is what a process (and, apart, its children) spent.
// client is the CPU time of the benchmark's own threads, the client's;
// wait the time the process's threads were ready but waited for a CPU
// (useOf only: the machine's load).
type procUse struct {
	cpu, childCPU, client time.Duration
	slices, childSlices   int64
	wait                  time.Duration
}

func (u procUse) sub(v procUse) procUse {
	return procUse{u.cpu - v.cpu, u.childCPU - v.childCPU, u.client - v.client, u.slices - v.slices, u.childSlices - v.childSlices, u.wait - v.wait}
}

func (u procUse) add(v procUse) procUse {
	return procUse{u.cpu + v.cpu, u.childCPU + v.childCPU, u.client + v.client, u.slices + v.slices, u.childSlices + v.childSlices, u.wait + v.wait}
}

// clientCPU is the CPU time of this process's threads, the benchmark's
// client, when m meters a server (zero otherwise).
func clientCPU(m procMeter) time.Duration {
	if m.pid == 0 {
		return 0
	}
	cpu, _, _ := threadsUse(os.Getpid())
	return cpu
}

// read sums /proc/PID/task/*/schedstat (ns on a CPU, times put on one)
// over the process's threads, and over its children's. A thread that
// ended between two reads is not counted: Go's threads seldom end.
func (m procMeter) read() procUse {
	if m.pid == 0 {
		return procUse{}
	}
	var u procUse
	cpu, slices, children := threadsUse(m.pid)
	u.cpu, u.slices = cpu, slices
	for _, c := range children {
		cpu, slices, _ := threadsUse(c)
		u.childCPU += cpu
		u.childSlices += slices
	}
	return u
}

// useOf is what the threads of the processes pids spent (their
// children's not counted), as read does, and how long they waited for a
// CPU.
func useOf(pids ...int) procUse {
	var u procUse
	for _, pid := range pids {
		t, _ := procuse.Threads(pid)
		u.cpu += t.CPU
		u.slices += t.Slices
		u.wait += t.Wait
	}
	return u
}

// threadsUse is the CPU time and times scheduled of pid's threads, and
// its children's pids.
func threadsUse(pid int) (cpu time.Duration, slices int64, children []int) {
	u, children := procuse.Threads(pid)
	return u.CPU, u.Slices, children
}

// perCall is what the server spent per call measured: its CPU time in
// µs, its wake-ups, and its upstream's CPU time in µs.
func (s sample) perCall() (cpu, wakeups, upstreamCPU float64) {
	n := float64(len(s.lat))
	if n == 0 {
		return 0, 0, 0
	}
	return micros(s.use.cpu) / n, float64(s.use.slices) / n, micros(s.use.childCPU) / n
}

// reportUse reports what the server on path spent per call, when it was
// metered.
func (s sample) reportUse(b *testing.B, path string) {
	if s.use == (procUse{}) {
		return
	}
	cpu, wakeups, upstream := s.perCall()
	b.ReportMetric(micros(s.use.client)/float64(len(s.lat)), path+"-client-cpu-µs/call")
	b.ReportMetric(cpu, path+"-cpu-µs/call")
	b.ReportMetric(wakeups, path+"-wakeups/call")
	b.ReportMetric(upstream, path+"-upstream-cpu-µs/call")
}
