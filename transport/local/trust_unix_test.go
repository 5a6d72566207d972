//go:build unix

package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Dial refuses a socket that may be another user's, before it writes a
// byte: in a directory others may write in (someone else could have made
// the socket), in a directory of another uid, or with a listener of
// another uid. Who "we" are is given to the checks, so that a test run as
// one user checks what another would meet.
func TestDialTrustsOnlyThisUser(t *testing.T) {
	p := testPaths(t)
	ln, err := Listen(p)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	me := os.Getuid()
	if err := checkDialDir(p.Dir, me); err != nil {
		t.Fatalf("the hub's own directory: %v", err)
	}
	if err := checkDialDir(p.Dir, me+1); !errors.Is(err, ErrNotTrusted) || !strings.Contains(err.Error(), "belongs to uid") {
		t.Errorf("a directory of another uid: %v", err)
	}
	c, err := Dial(context.Background(), p)
	if err != nil {
		t.Fatalf("Dial of our own hub: %v", err)
	}
	if err := checkPeer(c, me+1); !errors.Is(err, ErrNotTrusted) || !strings.Contains(err.Error(), "runs as uid") {
		t.Errorf("a listener of another uid: %v", err)
	}
	c.Close()

	for _, mode := range []os.FileMode{0o770, 0o707, 0o755, 0o1777} {
		if err := os.Chmod(p.Dir, mode); err != nil {
			t.Fatal(err)
		}
		if c, err := Dial(context.Background(), p); !errors.Is(err, ErrNotTrusted) || !strings.Contains(err.Error(), "open to other users") {
			if c != nil {
				c.Close()
			}
			t.Errorf("Dial in a directory of mode %v: %v", mode, err)
		}
	}
	// A symlink to a private directory is not the directory.
	if err := os.Chmod(p.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	link := p
	link.Dir = p.Dir + "-link"
	link.Socket = filepath.Join(link.Dir, filepath.Base(p.Socket))
	if err := os.Symlink(p.Dir, link.Dir); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(context.Background(), link); !errors.Is(err, ErrNotTrusted) {
		t.Errorf("Dial through a symlinked directory: %v", err)
	}
	// No directory yet: no hub, and the bridge starts one.
	gone := p
	gone.Dir = p.Dir + "-none"
	gone.Socket = filepath.Join(gone.Dir, filepath.Base(p.Socket))
	if _, err := Dial(context.Background(), gone); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Dial with no directory: %v, want ErrNotRunning", err)
	}
}
