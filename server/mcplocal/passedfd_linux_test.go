package mcplocal

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// checkPassedReopened checks how the hub holds the pipe whose read end r,
// the bridge's, blocking, it was passed: by one open file, non-blocking,
// its own (own: the passed one closed, r left blocking) or the one passed
// (r's open file, made non-blocking).
func checkPassedReopened(t *testing.T, r *os.File, own bool) {
	t.Helper()
	rc, err := r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var rfd, rflags int
	var st unix.Stat_t
	if cerr := rc.Control(func(fd uintptr) {
		rfd = int(fd)
		if err = unix.Fstat(rfd, &st); err == nil {
			rflags, err = unix.FcntlInt(fd, unix.F_GETFL, 0)
		}
	}); cerr != nil || err != nil {
		t.Fatal(cerr, err)
	}
	link := "pipe:[" + strconv.FormatUint(st.Ino, 10) + "]"
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	readers, nonblocking := 0, 0
	for _, e := range ents {
		fd, _ := strconv.Atoi(e.Name())
		if fd == rfd {
			continue
		}
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || l != link {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		var flags int64
		for line := range strings.Lines(string(info)) {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				flags, _ = strconv.ParseInt(strings.TrimSpace(v), 8, 64)
			}
		}
		if flags&unix.O_ACCMODE != unix.O_RDONLY {
			continue // the client's write end
		}
		readers++
		if flags&unix.O_NONBLOCK != 0 {
			nonblocking++
		}
	}
	if readers != 1 || nonblocking != 1 {
		t.Errorf("the hub reads the passed pipe through %d open files, %d non-blocking; want 1", readers, nonblocking)
	}
	if bridge := rflags&unix.O_NONBLOCK != 0; bridge == own {
		t.Errorf("the bridge's stdin is non-blocking: %v; want %v (own %v)", bridge, !own, own)
	}
}
