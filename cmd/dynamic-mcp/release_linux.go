package main

import (
	"bufio"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
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

// processResident is the process's resident memory in bytes (its
// program file's pages and its own), for releaseWhenQuiet: the second
// field of /proc/self/statm, in pages. It is read with bare system calls
// into a buffer on the stack: it runs at every look, right after a
// release too, and os.ReadFile and strings.Fields would map back in
// (64 KB a fault) 0.8 MB of the program file that the release had just
// dropped (measured: 8.5 against 7.7 MB once quiet).
func processResident() uint64 {
	fd, err := unix.Open("/proc/self/statm", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	var buf [128]byte
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil || n <= 0 {
		return 0
	}
	// "size resident shared text lib data dt", in pages
	var pages uint64
	field := 0
	for _, c := range buf[:n] {
		switch {
		case c == ' ':
			field++
		case field == 1 && c >= '0' && c <= '9':
			pages = pages*10 + uint64(c-'0')
		}
		if field > 1 {
			break
		}
	}
	return pages * uint64(unix.Getpagesize())
}

// releaseMemory gives back what starting up touched and the process will
// not need again: the heap it freed (returned to the kernel), and its
// page table entries for the read-only pages of the program file (code,
// constants, tables), most of which only the package initialisers and
// the config's parse read, and of the C library with cgo (1.3 MB the
// loader mapped, which the hub hardly calls). Those pages stay in the
// page cache, shared with every other process of these files: a page the
// process reads again is mapped again by a minor fault, without I/O.
// What the process list shows (RSS) is then what the process actually
// uses, not everything the start touched once.
//
// Only the files' mappings that are read-only and hold no page of the
// process's own are dropped: a private writable mapping (the data
// segment) would lose its contents, and so would a read-only one the
// loader wrote before protecting it (the relocations of a PIE build's or
// a shared library's RELRO segment, copied on write: its "Anonymous"
// pages, or its "Swap" ones once swapped out), which would read back as
// the file's unrelocated bytes.
func releaseMemory() {
	debug.FreeOSMemory()
	drop := toDrop()
	// From the first release on (the start's), what runs next maps these
	// pages in one by one, not 64 KB at a time.
	stopFaultAround(drop)
	for _, m := range drop {
		// Best effort: a mapping the kernel refuses to drop stays.
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, uintptr(m[0]), uintptr(m[1]-m[0]), unix.MADV_DONTNEED)
	}
}

// toDrop looks at the process's mappings (droppable) and returns those
// releaseMemory drops now (settled), keeping what it found for the next
// look. Nothing where smaps cannot be read whole.
func toDrop() [][2]uint64 {
	found, err := fileMappings()
	if err != nil {
		return nil // a mapping half read: drop nothing rather than guess
	}
	exe, _ := os.Executable()
	lastLook.Lock()
	defer lastLook.Unlock()
	drop, seen := settled(found, exe, lastLook.seen)
	lastLook.seen = seen
	return drop
}

// noteMappings takes a first look at the files' mappings for settled,
// without dropping anything. serve calls it first thing: the libraries
// the loader mapped before the program ran (with cgo, the C library and
// the loader itself) are settled by then, so the start's release drops
// them with the program file's. Without this look they stayed mapped
// until the first release after the start's, which a hub that gets
// calls at once reaches only when it falls quiet: right after 1,000
// calls 1.4 MB of the 4.2-4.9 MB of files' pages were libc's and the
// loader's (docs/performance.md). A library dlopened later (an NSS
// module) is still dropped only once two looks found it unchanged.
func noteMappings() {
	found, err := fileMappings()
	if err != nil {
		return
	}
	lastLook.Lock()
	defer lastLook.Unlock()
	_, lastLook.seen = settled(found, "", nil)
}

// fileMappings are droppable's mappings of /proc/self/smaps.
func fileMappings() ([]fileMapping, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return droppable(f)
}

// lastLook is what droppable found at the last release (see settled).
var lastLook struct {
	sync.Mutex
	seen map[[2]uint64]bool
}

// fileMapping is a mapping of a file: its address range and the file.
type fileMapping struct {
	r    [2]uint64
	path string
}

// settled keeps of found the mappings of the program file (exe), which
// never change, and those found at the last look too (last), and returns
// what this look found for the next. A library that another thread
// dlopens (with cgo, an NSS module for a user or host lookup) is first
// mapped whole and read-only, then overlaid with its data and relocated:
// dropped on a look taken in between, its relocated pages would read back
// as the file's bytes. A mapping seen unchanged at two looks seconds apart
// is not being loaded.
func settled(found []fileMapping, exe string, last map[[2]uint64]bool) (drop [][2]uint64, seen map[[2]uint64]bool) {
	seen = make(map[[2]uint64]bool, len(found))
	for _, m := range found {
		seen[m.r] = true
		if (exe != "" && m.path == exe) || last[m.r] {
			drop = append(drop, m.r)
		}
	}
	return drop, seen
}

// droppable are the mappings of smaps (/proc/self/smaps) releaseMemory
// may drop: the files' that are read-only and hold no page of the
// process's own, resident or swapped out.
func droppable(smaps io.Reader) ([]fileMapping, error) {
	var drop []fileMapping
	var start, end uint64
	var path string
	candidate := false
	sc := bufio.NewScanner(smaps)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			// 00400000-00f7a000 r-xp 00000000 fd:00 1234 /path/to/file
			if candidate {
				drop = append(drop, fileMapping{[2]uint64{start, end}, path})
			}
			candidate = false
			path = ""
			if len(fields) >= 6 {
				path = fields[5]
			}
			lo, hi, ok := strings.Cut(fields[0], "-")
			var err1, err2 error
			start, err1 = strconv.ParseUint(lo, 16, 64)
			end, err2 = strconv.ParseUint(hi, 16, 64)
			candidate = ok && err1 == nil && err2 == nil && end > start &&
				len(fields) >= 6 && strings.HasPrefix(fields[5], "/") && fields[1][1] != 'w'
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
		drop = append(drop, fileMapping{[2]uint64{start, end}, path})
	}
	return drop, sc.Err()
}
