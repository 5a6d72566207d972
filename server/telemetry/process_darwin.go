package telemetry

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// gatherProcess reads what client_golang's collector read on macOS: the
// start time (sysctl kern.proc.pid), the CPU time (getrusage), the open
// descriptors (/dev/fd, less the one reading it) and the soft limits of
// descriptors and address space. Resident and virtual memory it read only
// in a cgo build; the release builds are without cgo, and so is this.
func gatherProcess(g *gatherer) {
	if procs, err := unix.SysctlKinfoProcSlice("kern.proc.pid", os.Getpid()); err == nil && len(procs) == 1 {
		g.gauge("process_start_time_seconds", processStartHelp, float64(procs[0].Proc.P_starttime.Nano()/1e9), nil)
	}
	var ru unix.Rusage
	if err := unix.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		g.counter("process_cpu_seconds_total", processCPUHelp, time.Duration(ru.Stime.Nano()+ru.Utime.Nano()).Seconds(), nil)
	}
	if d, err := os.Open("/dev/fd"); err == nil {
		names, err := d.Readdirnames(0)
		d.Close()
		if err == nil {
			g.gauge("process_open_fds", processOpenFDsHelp, float64(len(names)-1), nil)
		}
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil {
		g.gauge("process_max_fds", processMaxFDsHelp, float64(rl.Cur), nil)
	}
	if syscall.Getrlimit(syscall.RLIMIT_AS, &rl) == nil {
		g.gauge("process_virtual_memory_max_bytes", processMaxVsizeHelp, float64(rl.Cur), nil)
	}
}
