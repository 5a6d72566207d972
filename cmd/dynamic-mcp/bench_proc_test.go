//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// procUsage is what a process's threads have spent so far, from /proc:
// CPU time and context switches, which a machine's load changes far less
// than it changes wall times. Zero where there is no /proc.
type procUsage struct {
	cpuNanos int64 // time on a CPU, all threads (schedstat)
	switches int64 // voluntary and involuntary context switches, all threads
}

// usageOf sums procUsage over the live threads of the processes pids
// (a thread that ended is not counted: Go's rarely end).
func usageOf(pids ...int) procUsage {
	var u procUsage
	for _, pid := range pids {
		dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
		tasks, _ := os.ReadDir(dir)
		for _, t := range tasks {
			if b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat")); err == nil {
				if f := bytes.Fields(b); len(f) > 0 {
					n, _ := strconv.ParseInt(string(f[0]), 10, 64)
					u.cpuNanos += n
				}
			}
			status, _ := os.ReadFile(filepath.Join(dir, t.Name(), "status"))
			for _, key := range []string{"voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"} {
				u.switches += statusCount(status, key)
			}
		}
	}
	return u
}

// statusCount is the number on the line of /proc/PID/status that starts
// with key, 0 when there is none.
func statusCount(status []byte, key string) int64 {
	i := bytes.Index(status, []byte("\n"+key))
	if i < 0 {
		return 0
	}
	rest := status[i+1+len(key):]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	n, _ := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64)
	return n
}

func (u procUsage) minus(v procUsage) procUsage {
	return procUsage{u.cpuNanos - v.cpuNanos, u.switches - v.switches}
}

func (u procUsage) plus(v procUsage) procUsage {
	return procUsage{u.cpuNanos + v.cpuNanos, u.switches + v.switches}
}

// usageCounter adds up what pids spend over the spans it is started for.
type usageCounter struct {
	pids  []int
	total procUsage
}

// span starts counting; the func it returns stops.
func (c *usageCounter) span() func() {
	start := usageOf(c.pids...)
	return func() { c.total = c.total.plus(usageOf(c.pids...).minus(start)) }
}

// report reports the CPU µs and context switches per call of n calls,
// named after who.
func (c *usageCounter) report(b *testing.B, who string, n int) {
	if len(c.pids) == 0 || n == 0 {
		return
	}
	b.ReportMetric(float64(c.total.cpuNanos)/1e3/float64(n), who+"-cpu-µs/call")
	b.ReportMetric(float64(c.total.switches)/float64(n), who+"-cs/call")
}
