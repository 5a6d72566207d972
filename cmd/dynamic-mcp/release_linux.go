package main

import (
	"bufio"
	"io"
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
// Only the executable's mappings that are read-only and hold no page of
// the process's own are dropped: a private writable mapping (the data
// segment) would lose its contents, and so would a read-only one the
// loader wrote before protecting it (the relocations of a PIE build's
// RELRO segment, copied on write: its "Anonymous" pages, or its "Swap"
// ones once swapped out), which would read back as the file's
// unrelocated bytes.
func releaseMemory() {
	debug.FreeOSMemory()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return
	}
	defer f.Close()
	drop, err := droppable(f, exe)
	if err != nil {
		return // a mapping half read: drop nothing rather than guess
	}
	for _, m := range drop {
		// Best effort: a mapping the kernel refuses to drop stays.
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, uintptr(m[0]), uintptr(m[1]-m[0]), unix.MADV_DONTNEED)
	}
}

// droppable are the mappings of smaps (/proc/self/smaps) releaseMemory
// drops: the program file exe's that are read-only and hold no page of
// the process's own, resident or swapped out.
func droppable(smaps io.Reader, exe string) ([][2]uint64, error) {
	var drop [][2]uint64
	var start, end uint64
	candidate := false
	sc := bufio.NewScanner(smaps)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			// 00400000-00f7a000 r-xp 00000000 fd:00 1234 /path/to/exe
			if candidate {
				drop = append(drop, [2]uint64{start, end})
			}
			candidate = false
			lo, hi, ok := strings.Cut(fields[0], "-")
			var err1, err2 error
			start, err1 = strconv.ParseUint(lo, 16, 64)
			end, err2 = strconv.ParseUint(hi, 16, 64)
			candidate = ok && err1 == nil && err2 == nil && end > start &&
				len(fields) >= 6 && fields[5] == exe && fields[1][1] != 'w'
			continue
		}
		// Anonymous: 4 kB (a page copied on write: the process's own);
		// Swap: 4 kB (such a page swapped out: Anonymous counts only the
		// resident ones, and MADV_DONTNEED would drop it all the same)
		if candidate && len(fields) == 3 && (fields[0] == "Anonymous:" || fields[0] == "Swap:") && fields[1] != "0" {
			candidate = false
		}
	}
	if candidate {
		drop = append(drop, [2]uint64{start, end})
	}
	return drop, sc.Err()
}
