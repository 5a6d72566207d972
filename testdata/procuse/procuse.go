// Package procuse reads what a process's threads have spent from /proc,
// for the benchmarks: figures the machine's load changes far less than
// it changes wall times (issue 33: a 2-core machine shared with other
// work). Linux only: elsewhere every figure is zero.
package procuse

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Use is what a process's threads spent: CPU time, the times a thread
// was put on a CPU (each a wake-up, most of them a goroutine woken by
// another: a context switch), and the time its threads were ready to run
// but waited for a CPU (the kernel's run queue: the machine's load, which
// the process cannot help).
type Use struct {
	CPU    time.Duration
	Slices int64
	Wait   time.Duration
}

// Sub is u less v.
func (u Use) Sub(v Use) Use {
	return Use{CPU: u.CPU - v.CPU, Slices: u.Slices - v.Slices, Wait: u.Wait - v.Wait}
}

// Threads sums /proc/PID/task/*/schedstat (ns on a CPU, ns waiting on a
// run queue, times put on one) over pid's threads, and returns its
// children's pids. A thread that ended between two reads is not counted:
// Go's threads seldom end.
func Threads(pid int) (u Use, children []int) {
	tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*"))
	for _, t := range tasks {
		if b, err := os.ReadFile(filepath.Join(t, "schedstat")); err == nil {
			t := schedstat(b)
			u.CPU += t.CPU
			u.Wait += t.Wait
			u.Slices += t.Slices
		}
		if b, err := os.ReadFile(filepath.Join(t, "children")); err == nil {
			for _, f := range bytes.Fields(b) {
				if c, err := strconv.Atoi(string(f)); err == nil {
					children = append(children, c)
				}
			}
		}
	}
	return u, children
}

// schedstat reads a thread's schedstat line: ns on a CPU, ns waiting on
// a run queue, times put on one (none of them, if it is not that line).
func schedstat(b []byte) Use {
	f := bytes.Fields(b)
	if len(f) != 3 {
		return Use{}
	}
	ns, _ := strconv.ParseInt(string(f[0]), 10, 64)
	wait, _ := strconv.ParseInt(string(f[1]), 10, 64)
	n, _ := strconv.ParseInt(string(f[2]), 10, 64)
	return Use{CPU: time.Duration(ns), Slices: n, Wait: time.Duration(wait)}
}

// Self and Children are what this process and, apart, its children spent.
func Self() (self, children Use) {
	self, pids := Threads(os.Getpid())
	for _, c := range pids {
		u, _ := Threads(c)
		children.CPU += u.CPU
		children.Slices += u.Slices
		children.Wait += u.Wait
	}
	return self, children
}
