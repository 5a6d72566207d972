package main

import (
	"bufio"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// processCPU is the CPU time the process has used, user and system, for
// releaseWhenQuiet.
func processCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// releaseMemory gives back what starting up touched and the process will
// not need again: the heap it freed (returned to the kernel), and its
// page table entries for the program file's read-only pages (code,
// constants, tables), most of which only the package initialisers and
// the config's parse read. Those pages stay in the page cache, shared
// with every other process of this binary: a page the process reads
// again is mapped again by a minor fault, without I/O. What the process
// list shows (RSS) is then what the process actually uses, not
// everything the start touched once.
//
// Only the read-only mappings of the executable are dropped: a private
// writable mapping (the data segment) would lose its contents.
func releaseMemory() {
	debug.FreeOSMemory()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 00400000-00f7a000 r-xp 00000000 fd:00 1234 /path/to/exe
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != exe || fields[1][1] == 'w' {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || end <= start {
			continue
		}
		// Best effort: a mapping the kernel refuses to drop stays.
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_DONTNEED)
	}
}
