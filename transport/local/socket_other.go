//go:build !unix

package local

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
)

// Supported reports whether this OS has the shared hub's transport: not
// yet on Windows, where serve keeps one hub per process.
const Supported = false

// ErrUnsupported is what every function here answers on this OS.
var ErrUnsupported = errors.New("the shared hub is not supported on this OS")

// ErrRunning is Listen's answer when a hub already listens on the socket.
var ErrRunning = errors.New("a hub is already running for this config")

// ErrNotRunning is Dial's answer when no hub listens on the socket.
var ErrNotRunning = errors.New("no hub is running for this config")

// ErrNotTrusted is Dial's answer when the socket may be another user's.
var ErrNotTrusted = errors.New("the hub's socket is not this user's alone")

func checkOwner(string, fs.FileInfo, int) error { return nil }

// Listen is not supported on this OS.
func Listen(Paths) (net.Listener, error) { return nil, ErrUnsupported }

// Dial is not supported on this OS.
func Dial(context.Context, Paths) (*net.UnixConn, error) { return nil, ErrNotRunning }

// Lock is not supported on this OS.
func Lock(context.Context, Paths) (func(), error) { return nil, ErrUnsupported }

// SendFiles is not supported on this OS.
func SendFiles(*net.UnixConn, ...*os.File) error { return ErrUnsupported }

// ReceiveFiles is not supported on this OS.
func ReceiveFiles(*net.UnixConn, bool, ...string) ([]*os.File, error) { return nil, ErrUnsupported }

// WaitingReader is f: nothing is passed on this OS.
func WaitingReader(f *os.File) io.ReadCloser { return f }
