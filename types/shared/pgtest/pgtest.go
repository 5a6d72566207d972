//go:build unix

// Package pgtest starts a PostgreSQL server of a test's own, from
// Debian's postgresql package (or initdb and postgres on PATH): a cluster
// in a temporary directory, on a free loopback port, with its unix
// socket beside it, stopped when the test ends. A machine that runs the
// cluster of its package is not used. When PostgreSQL is missing the
// test is skipped, but not in CI, where it fails.
package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// binDir finds the directory of initdb and postgres: Debian's newest
// /usr/lib/postgresql/<version>/bin, or PATH's.
func binDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return va - vb
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

// Start starts a PostgreSQL server for t and returns its URL, of the
// superuser "postgres" and its database "postgres", trusted on loopback.
// The server is stopped (a fast shutdown) and its files removed when the
// test ends.
//
// PostgreSQL refuses to run as root: as root, the cluster belongs to the
// postgres user and initdb and postgres run as that user, in a directory
// of their own under the system's temporary directory (t.TempDir's
// parent is closed to other users).
func Start(t testing.TB) string {
	t.Helper()
	bin := binDir()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("PostgreSQL is not installed (Debian: apt-get install postgresql)")
		}
		t.Skip("PostgreSQL is not installed (Debian: apt-get install postgresql)")
	}
	dir, err := os.MkdirTemp("", "pgtest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, PostgreSQL needs a user to run as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	command := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		return cmd
	}
	data := filepath.Join(dir, "data")
	if out, err := command("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	// The port is picked free and then bound by postgres, another
	// process: anyone (a test beside this one, another copy of the
	// suite) may bind it in between. postgres then exits saying so, and
	// the cluster is started again on another port.
	for attempt := 1; ; attempt++ {
		url, log, err := serve(t, command, data, dir)
		if err == nil {
			return url
		}
		if !strings.Contains(log, "could not bind") || attempt == 5 {
			t.Fatalf("%v\n%s", err, log)
		}
	}
}

// serve starts postgres on the cluster in data, on a free loopback port
// and with its socket in dir, and waits until it answers. It returns the
// URL of the server, or an error and the server's output when it exited
// first or did not answer in time; a server that answers is stopped when
// the test ends.
func serve(t testing.TB, command func(string, ...string) *exec.Cmd, data, dir string) (url, log string, err error) {
	port := freePort(t)
	var out syncBuffer
	srv := command("postgres", "-D", data, "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-k", dir,
		"-c", "fsync=off", "-c", "max_connections=50")
	srv.Stdout, srv.Stderr = &out, &out
	if err := srv.Start(); err != nil {
		t.Fatalf("start postgres: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	stop := func() {
		_ = srv.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = srv.Process.Kill()
			<-exited
		}
	}
	url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	// A bound for a server that never answers; a loaded machine may take
	// many seconds to start one, and this costs a passing test nothing.
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := pgx.Connect(ctx, url)
		cancel()
		if err == nil {
			c.Close(context.Background())
			t.Cleanup(stop)
			return url, "", nil
		}
		select {
		case err := <-exited:
			return "", out.String(), fmt.Errorf("postgres exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return "", out.String(), fmt.Errorf("postgres did not answer in 60 s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePort is a loopback port no one listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// syncBuffer is the server's output, written by exec's copying and read
// by a failing test.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}
