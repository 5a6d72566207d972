//go:build !linux

package local

import "os"

// Polled is f: only Linux opens a pipe again (see polled_linux.go).
func Polled(f *os.File) *os.File { return f }

// PolledOut is f: only Linux opens a pipe again (see polled_linux.go).
func PolledOut(f *os.File) *os.File { return f }

// OwnPipe is f, not ok: only Linux opens a pipe again (see polled_linux.go).
func OwnPipe(f *os.File, flag int) (_ *os.File, ok bool) { return f, false }

// ownPipeFD is nil, not ok: only Linux opens a pipe again.
func ownPipeFD(fd, flag int) (_ *os.File, ok bool) { return nil, false }
