//go:build unix

package local

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// SendFiles passes files over c (SCM_RIGHTS): the hub gets its own
// descriptors of the bridge's stdin and stdout.
func SendFiles(c *net.UnixConn, files ...*os.File) error {
	fds := make([]int, len(files))
	for i, f := range files {
		raw, err := f.SyscallConn()
		if err != nil {
			return fmt.Errorf("pass %s: %w", f.Name(), err)
		}
		if err := raw.Control(func(fd uintptr) { fds[i] = int(fd) }); err != nil {
			return fmt.Errorf("pass %s: %w", f.Name(), err)
		}
	}
	_, _, err := c.WriteMsgUnix([]byte{0}, syscall.UnixRights(fds...), nil)
	if err != nil {
		return fmt.Errorf("pass files: %w", err)
	}
	return nil
}

// ReceiveFiles takes n files that SendFiles passed on c, named by names,
// non-blocking, so that reads and writes on them take deadlines and a
// Close ends a read in progress. With own, a passed pipe is opened again
// as the process's own (OwnPipe) and its descriptor closed, its flags
// (the sender's too) left as they were; what cannot be is made
// non-blocking as it is passed. A socket connected to c's own address (a
// connection to this hub, see connectedTo) is refused.
func ReceiveFiles(c *net.UnixConn, own bool, names ...string) ([]*os.File, error) {
	oob := make([]byte, syscall.CmsgSpace(4*len(names)))
	_, oobn, _, _, err := c.ReadMsgUnix(make([]byte, 1), oob)
	if err != nil {
		return nil, fmt.Errorf("receive files: %w", err)
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, fmt.Errorf("receive files: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		got, err := syscall.ParseUnixRights(&m)
		if err != nil {
			return nil, fmt.Errorf("receive files: %w", err)
		}
		fds = append(fds, got...)
	}
	if len(fds) != len(names) {
		for _, fd := range fds {
			syscall.Close(fd)
		}
		return nil, errors.New("receive files: the bridge passed " + fmt.Sprint(len(fds)) + ", want " + fmt.Sprint(len(names)))
	}
	if to := c.LocalAddr().String(); slices.ContainsFunc(fds, func(fd int) bool { return connectedTo(fd, to) }) {
		for _, fd := range fds {
			syscall.Close(fd)
		}
		return nil, errors.New("receive files: the bridge passed a connection to this hub, which would wait on itself")
	}
	files := make([]*os.File, len(fds))
	for i, fd := range fds {
		if own {
			if p, ok := ownPassedFD(fd); ok {
				syscall.Close(fd)
				files[i] = p
				continue
			}
		}
		syscall.CloseOnExec(fd)
		_ = syscall.SetNonblock(fd, true)
		files[i] = os.NewFile(uintptr(fd), names[i])
	}
	return files, nil
}

// connectedTo reports whether fd is a socket connected to the Unix socket
// at path: passed as a client's stdin or stdout, a connection to the hub
// (the bridge's own, or another's) would have the hub wait on itself, and
// hold that connection's session, and the one it came in, for ever.
func connectedTo(fd int, path string) bool {
	sa, err := unix.Getpeername(fd)
	u, ok := sa.(*unix.SockaddrUnix)
	return err == nil && ok && path != "" && u.Name == path
}

// ownPassedFD is the passed pipe fd opened again for the way it was
// passed (read or write), as the process's own (ownPipeFD); not ok when
// it is not a pipe end open one way or cannot be opened again.
func ownPassedFD(fd int) (_ *os.File, ok bool) {
	flags, err := unix.FcntlInt(uintptr(fd), syscall.F_GETFL, 0)
	if err != nil {
		return nil, false
	}
	switch flag := flags & syscall.O_ACCMODE; flag {
	case os.O_RDONLY, os.O_WRONLY:
		return ownPipeFD(fd, flag)
	}
	return nil, false
}
