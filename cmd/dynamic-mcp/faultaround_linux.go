package main

import (
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// userfaultfd(2)'s constants (linux/userfaultfd.h), which x/sys/unix does
// not carry.
const (
	uffdUserModeOnly     = 1          // UFFD_USER_MODE_ONLY: allowed to every user
	uffdAPI              = 0xAA       // UFFD_API
	uffdFeatureWPAsync   = 1 << 15    // UFFD_FEATURE_WP_ASYNC, Linux 6.7
	uffdioAPI            = 0xC018AA3F // _IOWR(0xAA, 0x3F, struct uffdio_api)
	uffdioRegister       = 0xC020AA00 // _IOWR(0xAA, 0x00, struct uffdio_register)
	uffdioRegisterModeWP = 1 << 1     // UFFDIO_REGISTER_MODE_WP
)

// noUserfaultfdEnv set to 1 in the hub's environment keeps it from
// opening the userfaultfd, as where the kernel or a seccomp filter
// refuses it: the SeedContract benchmark measures the hub so
// (hub-rss-nouffd-MB, docs/performance.md).
const noUserfaultfdEnv = "DYNAMIC_MCP_NO_USERFAULTFD"

// faultAround is the userfaultfd that holds the files' read-only mappings
// registered (see stopFaultAround); it stays open for the life
// of the process, since closing it would end the registration.
var (
	faultAround     = -1
	faultAroundOnce sync.Once
)

// stopFaultAround keeps the kernel from mapping the 15 neighbours of each
// page the process faults in from the mappings given (the read-only ones
// of the program file and, with cgo, of the C library): a run of calls
// touches pages spread over the code, the type data and the function
// tables, and at 64 KB a fault it mapped in 6-7 MB of the file for the
// 2-3 MB it read (docs/performance.md). madvise(MADV_RANDOM) does not
// stop that; the one thing that does (mm/memory.c, should_fault_around)
// is a userfaultfd registration of the mapping in write-protect mode.
// With UFFD_FEATURE_WP_ASYNC the kernel resolves write-protect faults
// itself (there are none: the mappings are read-only), so nothing reads
// the descriptor, and it accepts mappings of any file. Reads map one
// page each, from the page cache, as before.
//
// Best effort: where userfaultfd is missing (before Linux 6.7, seccomp
// filters such as container runtimes' defaults, noUserfaultfdEnv),
// nothing changes. The descriptor is opened once; each release
// registers what it drops (a mapping registered before stays so: the
// kernel accepts the same registration again), so a mapping dropped
// first at a later release (another file's, see settled) is registered
// too. It reports whether any of the mappings was registered.
func stopFaultAround(ranges [][2]uint64) bool {
	faultAroundOnce.Do(func() {
		if os.Getenv(noUserfaultfdEnv) == "1" {
			return
		}
		fd, _, errno := unix.Syscall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC|unix.O_NONBLOCK|uffdUserModeOnly, 0, 0)
		if errno != 0 {
			return
		}
		api := struct{ api, features, ioctls uint64 }{api: uffdAPI, features: uffdFeatureWPAsync}
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, uffdioAPI, uintptr(unsafe.Pointer(&api))); errno != 0 {
			unix.Close(int(fd))
			return
		}
		faultAround = int(fd)
	})
	if faultAround < 0 {
		return false
	}
	registered := false
	for _, m := range ranges {
		reg := struct{ start, len, mode, ioctls uint64 }{start: m[0], len: m[1] - m[0], mode: uffdioRegisterModeWP}
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(faultAround), uffdioRegister, uintptr(unsafe.Pointer(&reg))); errno == 0 {
			registered = true
		}
	}
	return registered
}
