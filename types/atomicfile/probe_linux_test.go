package atomicfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Writable makes nothing in the directory, not even for a moment: a
// client watching it (an editor, a config reloader) sees no file come and
// go. The directory's inotify events up to a marker made afterwards are
// the marker's alone.
func TestWritableMakesNoFile(t *testing.T) {
	dir := t.TempDir()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Skip("no inotify:", err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_DELETE|unix.IN_MOVED_TO); err != nil {
		t.Fatal(err)
	}
	if err := Writable(filepath.Join(dir, "mcp.json")); err != nil {
		t.Fatalf("Writable: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "marker"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := unix.Read(fd, buf) // blocks until the marker's event at the latest
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)], "\x00"))
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if name == "marker" {
				return
			}
			t.Errorf("Writable made a change in the directory: %s (mask %#x)", name, ev.Mask)
		}
	}
}
