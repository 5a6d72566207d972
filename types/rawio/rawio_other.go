//go:build !linux

package rawio

import (
	"errors"
	"os"
	"time"
)

// File is f's own reads and writes: raw system calls are used on Linux
// only, where they were measured (OpenBSD refuses RawSyscall).
type File struct{ f *os.File }

// Write writes nothing here (raw system calls are Linux's alone): the
// caller writes p through the file instead.
func Write(fd uintptr, p []byte) (int, error) { return 0, errors.ErrUnsupported }

// NewFile is a File of f.
func NewFile(f *os.File) *File { return &File{f: f} }

// Raw is false: f's own reads and writes.
func (r *File) Raw() bool { return false }

func (r *File) Read(p []byte) (int, error)         { return r.f.Read(p) }
func (r *File) Write(p []byte) (int, error)        { return r.f.Write(p) }
func (r *File) SetWriteDeadline(t time.Time) error { return r.f.SetWriteDeadline(t) }
func (r *File) SetReadDeadline(t time.Time) error  { return r.f.SetReadDeadline(t) }
func (r *File) Close() error                       { return r.f.Close() }
func (r *File) File() *os.File                     { return r.f }
