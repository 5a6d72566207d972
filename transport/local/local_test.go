//go:build unix

package local

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testPaths(t *testing.T) Paths {
	t.Helper()
	t.Setenv("XDG_RUNTIME_DIR", "")
	p, err := PathsFor(filepath.Join(t.TempDir(), "config.yaml"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Each config has a socket of its own; the same config, however named,
// the same one; the directory is private.
func TestPathsForEachConfig(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "")
	state := t.TempDir()
	dir := t.TempDir()
	a, _ := PathsFor(filepath.Join(dir, "a.yaml"), state)
	b, _ := PathsFor(filepath.Join(dir, "b.yaml"), state)
	t.Chdir(dir)
	a2, _ := PathsFor("a.yaml", state)
	if a.Socket == b.Socket || a.Socket != a2.Socket {
		t.Fatalf("sockets a %s, b %s, a by a relative path %s", a.Socket, b.Socket, a2.Socket)
	}
	if filepath.Dir(a.Socket) != filepath.Join(state, "run") {
		t.Fatalf("socket %s not under the state dir's run/", a.Socket)
	}
	if _, err := PathsFor("a.yaml", "/"+strings.Repeat("a", 120)); !errors.Is(err, errPathTooLong) {
		t.Fatalf("a socket path over the limit: %v", err)
	}
	// A client with $XDG_RUNTIME_DIR and one without (an SDK's default
	// environment) find one hub; only a state dir too long for a socket
	// sends it to $XDG_RUNTIME_DIR.
	x := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", x)
	if ax, _ := PathsFor(filepath.Join(dir, "a.yaml"), state); ax != a {
		t.Fatalf("with $XDG_RUNTIME_DIR: %+v, without: %+v", ax, a)
	}
	long := filepath.Join(state, strings.Repeat("s", 90))
	lx, err := PathsFor(filepath.Join(dir, "a.yaml"), long)
	if err != nil || filepath.Dir(lx.Socket) != filepath.Join(x, "dynamic-mcp") {
		t.Fatalf("a long state dir: socket %s (%v), want it under $XDG_RUNTIME_DIR/dynamic-mcp", lx.Socket, err)
	}
}

// Listen makes the directory private (tightening a looser one), refuses
// to displace a hub that listens, and replaces a socket nobody answers on.
func TestListen(t *testing.T) {
	p := testPaths(t)
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p.Dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v, want 0700", fi.Mode().Perm())
	}
	if _, err := Listen(p); !errors.Is(err, ErrRunning) {
		t.Fatalf("a second Listen: %v, want ErrRunning", err)
	}
	ln.(*listener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := Dial(context.Background(), p); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Dial of a stale socket: %v, want ErrNotRunning", err)
	}
	ln, err = Listen(p)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	ln.Close()
	if err := os.Symlink(p.Socket, p.Socket); err != nil { // a loop
		t.Fatal(err)
	}
	ln, err = Listen(p)
	if err != nil {
		t.Fatalf("Listen over a symlink loop: %v", err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept() // a peer of our own uid is admitted
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	c, err := Dial(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if s, ok := <-accepted; !ok {
		t.Fatal("our own connection was refused")
	} else {
		s.Close()
	}
}

// The lock is held by one at a time, and given up by a waiter whose
// context ends.
func TestLock(t *testing.T) {
	p := testPaths(t)
	unlock, err := Lock(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Lock(ctx, p); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second Lock while held: %v", err)
	}
	got := make(chan func(), 1)
	go func() {
		u, err := Lock(context.Background(), p)
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	unlock()
	(<-got)()
}

// Files passed over the socket arrive as files of their own: what one
// side writes to the passed pipe, the other reads.
func TestPassFiles(t *testing.T) {
	a, b, err := socketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := SendFiles(a, r, w); err != nil {
		t.Fatal(err)
	}
	files, err := ReceiveFiles(b, false, "r", "w")
	if err != nil {
		t.Fatal(err)
	}
	defer files[0].Close()
	defer files[1].Close()
	if _, err := files[1].WriteString("hello\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil || line != "hello\n" {
		t.Fatalf("read %q, %v", line, err)
	}
}

func socketPair() (*net.UnixConn, *net.UnixConn, error) {
	dir, err := os.MkdirTemp("", "lt")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "s"), Net: "unix"})
	if err != nil {
		return nil, nil, err
	}
	defer ln.Close()
	a, err := net.DialUnix("unix", nil, ln.Addr().(*net.UnixAddr))
	if err != nil {
		return nil, nil, err
	}
	b, err := ln.AcceptUnix()
	return a, b, err
}

// A handshake line is bounded, and a connection that ends before its
// newline is an unexpected EOF.
func TestReadLine(t *testing.T) {
	var h Hello
	if err := ReadLine(bufio.NewReader(stringsReader(`{"dynamic-mcp":"v1","op":"session"}`+"\n")), &h); err != nil || h.Op != OpSession || h.Version != "v1" {
		t.Fatalf("%+v, %v", h, err)
	}
	if err := ReadLine(bufio.NewReader(stringsReader(`{"dynamic-mcp"`)), &h); !errors.Is(err, errUnexpectedEOF()) {
		t.Fatalf("a cut line: %v", err)
	}
	big := make([]byte, maxLine+10)
	for i := range big {
		big[i] = 'x'
	}
	if err := ReadLine(bufio.NewReader(stringsReader(string(big))), &h); err == nil {
		t.Fatal("a line over the bound was read")
	}
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }

func errUnexpectedEOF() error { return io.ErrUnexpectedEOF }

// Keep listens again when the socket file is deleted or replaced by
// another file, and leaves a hub that took the path since be: Close then
// does not remove that hub's socket.
func TestListenKeep(t *testing.T) {
	p := testPaths(t)
	ln, err := Listen(p)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	k := ln.(*listener)
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	reach := func(what string) {
		t.Helper()
		c, err := Dial(context.Background(), p)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		c.Close()
		select {
		case s, ok := <-accepted:
			if !ok {
				t.Fatalf("%s: Accept ended", what)
			}
			s.Close()
		case <-time.After(time.Minute): // bounds a hang, not a timing
			t.Fatalf("%s: nothing accepted", what)
		}
	}
	if again, err := k.Keep(); again || err != nil {
		t.Fatalf("Keep of a socket in place: %v, %v", again, err)
	}
	if err := os.Remove(p.Socket); err != nil {
		t.Fatal(err)
	}
	if again, err := k.Keep(); !again || err != nil {
		t.Fatalf("Keep of a deleted socket: %v, %v", again, err)
	}
	reach("after the file was deleted")
	if err := os.Remove(p.Socket); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.Socket, []byte("not a socket"), 0o600); err != nil {
		t.Fatal(err)
	}
	if again, err := k.Keep(); !again || err != nil {
		t.Fatalf("Keep of a socket replaced by a file: %v, %v", again, err)
	}
	reach("after the file was replaced")

	// Moved, with a symlink to it in its place: still the listener's.
	moved := p.Socket + ".moved"
	if err := os.Rename(p.Socket, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, p.Socket); err != nil {
		t.Fatal(err)
	}
	if again, err := k.Keep(); again || err != nil {
		t.Fatalf("Keep of a symlink to the moved socket: %v, %v", again, err)
	}
	reach("through a symlink to the moved socket")

	// A directory opened to others is made private again.
	if err := os.Chmod(p.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if again, err := k.Keep(); again || err != nil {
		t.Fatalf("Keep of a directory opened to others: %v, %v", again, err)
	}
	if fi, _ := os.Stat(p.Dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v after Keep, want 0700", fi.Mode().Perm())
	}

	// Another hub took the path: it is left be, and the path is taken
	// again once it is free.
	if err := os.Remove(p.Socket); err != nil {
		t.Fatal(err)
	}
	other, err := Listen(p)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := k.Keep(); again || !errors.Is(err, ErrRunning) {
		t.Fatalf("Keep where another hub listens: %v, %v", again, err)
	}
	other.Close()
	if again, err := k.Keep(); !again || err != nil {
		t.Fatalf("Keep once the other hub is gone: %v, %v", again, err)
	}
	reach("after the other hub left")

	// Closing this one leaves the socket of a hub that took the path.
	if err := os.Remove(p.Socket); err != nil {
		t.Fatal(err)
	}
	other, err = Listen(p)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ln.Close()
	select {
	case _, ok := <-accepted:
		if ok {
			t.Fatal("Accept took a connection after Close")
		}
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("Accept did not end with Close")
	}
	go func() {
		if c, err := other.Accept(); err == nil {
			c.Close()
		}
	}()
	if c, err := Dial(context.Background(), p); err != nil {
		t.Fatalf("the other hub after this one closed: %v", err)
	} else {
		c.Close()
	}
}
