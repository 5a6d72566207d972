//go:build unix

package local

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
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
// Close ends a read in progress.
func ReceiveFiles(c *net.UnixConn, names ...string) ([]*os.File, error) {
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
	files := make([]*os.File, len(fds))
	for i, fd := range fds {
		syscall.CloseOnExec(fd)
		_ = syscall.SetNonblock(fd, true)
		files[i] = os.NewFile(uintptr(fd), names[i])
	}
	return files, nil
}
