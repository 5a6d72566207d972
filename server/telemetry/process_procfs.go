//go:build !windows && !darwin

package telemetry

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// userHZ is the clock tick of /proc's times (procfs assumes 100 too).
const userHZ = 100

// gatherProcess reads /proc/self as prometheus/procfs did for the
// collector: stat (CPU time, virtual and resident memory, start time),
// fd, limits and net/netstat.
func gatherProcess(g *gatherer) {
	if stat, err := os.ReadFile("/proc/self/stat"); err == nil {
		// The fields after the command's name, which may hold spaces and
		// parentheses: state is field 3, utime 14, stime 15,
		// starttime 22, vsize 23, rss 24.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
			f := strings.Fields(string(stat[i+1:]))
			field := func(n int) uint64 {
				if n-3 >= len(f) {
					return 0
				}
				v, _ := strconv.ParseUint(f[n-3], 10, 64)
				return v
			}
			g.counter("process_cpu_seconds_total", processCPUHelp, float64(field(14)+field(15))/userHZ, nil)
			g.gauge("process_virtual_memory_bytes", processVsizeHelp, float64(field(23)), nil)
			g.gauge("process_resident_memory_bytes", processRSSHelp, float64(int(field(24))*os.Getpagesize()), nil)
			if boot, ok := bootTime(); ok {
				g.gauge("process_start_time_seconds", processStartHelp, float64(boot)+float64(field(22))/userHZ, nil)
			}
		}
	}
	if n, ok := openFDs(); ok {
		g.gauge("process_open_fds", processOpenFDsHelp, float64(n), nil)
	}
	if files, space, ok := limits(); ok {
		g.gauge("process_max_fds", processMaxFDsHelp, float64(files), nil)
		g.gauge("process_virtual_memory_max_bytes", processMaxVsizeHelp, float64(space), nil)
	}
	if in, out, ok := netOctets(); ok {
		g.counter("process_network_receive_bytes_total", processReceivedHelp, in, nil)
		g.counter("process_network_transmit_bytes_total", processTransmitHelp, out, nil)
	}
}

// bootTime is /proc/stat's btime.
func bootTime() (uint64, bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "btime "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// openFDs counts /proc/self/fd: its size where Linux (6.2+) gives the
// count there, else its entries, as procfs did.
func openFDs() (int, bool) {
	if st, err := os.Stat("/proc/self/fd"); err == nil && st.Size() > 0 {
		return int(st.Size()), true
	}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	return len(names), err == nil
}

// limits reads the soft limits of open files and address space from
// /proc/self/limits ("unlimited" is the largest uint64, as procfs had it).
func limits() (files, space uint64, ok bool) {
	data, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		return 0, 0, false
	}
	var seen int
	for line := range strings.SplitSeq(string(data), "\n") {
		var dst *uint64
		rest, isFiles := strings.CutPrefix(line, "Max open files ")
		rest, isSpace := strings.CutPrefix(rest, "Max address space ")
		switch {
		case isFiles:
			dst = &files
		case isSpace:
			dst = &space
		default:
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0, 0, false
		}
		if f[0] == "unlimited" {
			*dst = 1<<64 - 1
		} else if *dst, err = strconv.ParseUint(f[0], 10, 64); err != nil {
			return 0, 0, false
		}
		seen++
	}
	return files, space, seen == 2
}

// netOctets reads IpExt's InOctets and OutOctets of /proc/self/net/netstat
// (pairs of lines: the names, then the values).
func netOctets() (in, out float64, ok bool) {
	data, err := os.ReadFile("/proc/self/net/netstat")
	if err != nil {
		return 0, 0, false
	}
	lines := strings.Split(string(data), "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		names, values := strings.Split(lines[i], " "), strings.Split(lines[i+1], " ")
		if names[0] != "IpExt:" || len(names) != len(values) {
			continue
		}
		for j, n := range names {
			v, _ := strconv.ParseFloat(values[j], 64)
			switch n {
			case "InOctets":
				in = v
			case "OutOctets":
				out = v
			}
		}
	}
	return in, out, true
}
