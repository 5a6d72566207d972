//go:build unix

package atomicfile

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// probeDir reports whether Write could make its temporary file (named
// by pattern) in dir, without making one: a client watching the
// directory sees nothing. access(2) asks for the write and search
// permission a new entry needs, and fails with EROFS on a read-only
// mount. It checks the real uid, which is the effective one for the hub
// (it is never installed setuid); the kernel's own check, ACLs and
// root's override included, is the one the write will meet.
func probeDir(dir, _ string) error {
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return &fs.PathError{Op: "access", Path: dir, Err: err}
	}
	return nil
}
