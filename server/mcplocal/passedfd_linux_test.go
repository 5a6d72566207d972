package mcplocal

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// checkPassedReopened checks how the hub holds the pipe whose read end r,
// the bridge's, it was passed: by one open file, its own (own: the passed
// one closed, its flags apart from r's) or the one passed (sharing r's).
// It makes r blocking, as another holder of it may, for the time it looks.
func checkPassedReopened(t *testing.T, r *os.File, own bool) {
	t.Helper()
	rc, err := r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var rfd int
	var st unix.Stat_t
	if cerr := rc.Control(func(fd uintptr) {
		rfd = int(fd)
		if err = unix.Fstat(rfd, &st); err == nil {
			err = syscall.SetNonblock(rfd, false)
		}
	}); cerr != nil || err != nil {
		t.Fatal(cerr, err)
	}
	defer rc.Control(func(fd uintptr) { _ = syscall.SetNonblock(int(fd), true) })
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
	if readers != 1 || (nonblocking == 1) != own {
		t.Errorf("the hub reads the passed pipe through %d open files, %d with flags of their own; want 1, own %v", readers, nonblocking, own)
	}
}
