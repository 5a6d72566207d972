//go:build unix

// Package pgtest gives a test a PostgreSQL database of its own, in a
// server from Debian's postgresql package (or initdb and postgres on
// PATH) that the tests of a binary share: a cluster in a temporary
// directory, in memory where Linux has /dev/shm, that listens on its
// unix socket there and on no TCP port.
// A machine that runs the cluster of its package is not used. When
// PostgreSQL is missing the test is skipped, but not in CI, where it
// fails.
package pgtest

import (
	"context"
	"fmt"
	"net/url"
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

// Start gives t a database of its own, empty, in the test binary's one
// PostgreSQL cluster, and returns its URL (the superuser "postgres",
// trusted, over the cluster's unix socket:
// postgres://postgres@/NAME?host=DIR&port=5432&sslmode=disable, to which
// a caller may append &param=value). The database is dropped when the
// test ends.
//
// The cluster is started by the first test that asks for one: initdb
// alone takes seconds on a loaded machine, a database in a running
// cluster milliseconds; and its data directory is a copy of the one
// initdb made the first time (makeData). It is stopped (a fast shutdown) and its files
// removed when no test uses it any more, or, in a package whose TestMain
// runs its tests through Shared, when they have all run. What tests of
// one cluster share: its roles and settings (the tests create neither)
// and pg_stat_activity; LISTEN/NOTIFY and advisory locks are each
// database's own.
//
// PostgreSQL refuses to run as root: as root, the cluster belongs to the
// postgres user and initdb and postgres run as that user, in a directory
// of their own under /dev/shm or the system's temporary directory
// (makeClusterDir; t.TempDir's parent is closed to other users).
func Start(t testing.TB) string {
	t.Helper()
	c, name := shared.use(t)
	t.Cleanup(func() { shared.release(c, name) })
	if err := c.exec(t.Context(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return c.url(name)
}

// M is what a TestMain runs: *testing.M, or a wrapper of it such as
// Shared's (goleak.VerifyTestMain takes one too).
type M interface{ Run() int }

// Shared keeps the cluster the first test starts until all of m's tests
// have run, rather than until no test uses it: in a TestMain,
// os.Exit(pgtest.Shared(m).Run()). Without it, tests that do not overlap
// in time each start a cluster of their own.
func Shared(m M) M { return sharedRun{m} }

type sharedRun struct{ m M }

func (s sharedRun) Run() int {
	shared.mu.Lock()
	shared.keep = true
	shared.mu.Unlock()
	code := s.m.Run()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	shared.keep = false
	if shared.c != nil && shared.users == 0 {
		shared.c.stop()
		shared.c = nil
	}
	return code
}

// shared is the test binary's cluster.
var shared sharedState

type sharedState struct {
	mu    sync.Mutex // guards the fields below
	c     *cluster   // running, or nil
	users int        // tests whose database is in c
	keep  bool       // Shared runs the tests: c stays up at no users
	n     int        // databases made, for their names
}

// use returns the running cluster, starting it if none runs, and a name
// for a new database in it, counting t as a user until release.
func (s *sharedState) use(t testing.TB) (*cluster, string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c != nil && s.c.exited() {
		// It died (the machine out of memory, say): the tests after it
		// get a cluster again, as they did with one each.
		s.c.stop()
		s.c = nil
	}
	if s.c == nil {
		s.c = startCluster(t)
	}
	s.users++
	s.n++
	return s.c, fmt.Sprintf("test_%d", s.n)
}

// release drops the database name and stops c when no test uses it any
// more and the tests do not run through Shared. FORCE: a hub a test
// left connected does not keep its database.
func (s *sharedState) release(c *cluster, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = c.exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users--
	if s.users == 0 && !s.keep && s.c == c {
		c.stop()
		s.c = nil
	}
}

// cluster is a running PostgreSQL cluster.
type cluster struct {
	dir  string        // holds its socket, .s.PGSQL.<port>
	gone chan struct{} // closed when postgres exits
	stop func()        // stops the server and removes its files
}

func (c *cluster) exited() bool {
	select {
	case <-c.gone:
		return true
	default:
		return false
	}
}

// port names the cluster's socket file (.s.PGSQL.5432) in its
// directory. postgres listens on no TCP port (listen_addresses is
// empty), so the number is only part of a file name in a directory no
// other server uses: nothing is picked free and hoped for.
const port = 5432

// url is the URL of the cluster's database name, over its socket: the
// host parameter a directory (pgconn takes a host starting with "/" as
// one), its slashes left as they are (a query may hold them) so that
// the URL reads well in a failing test's log.
func (c *cluster) url(name string) string {
	dir := strings.ReplaceAll(url.QueryEscape(c.dir), "%2F", "/")
	return fmt.Sprintf("postgres://postgres@/%s?host=%s&port=%d&sslmode=disable", name, dir, port)
}

// exec runs sql in the cluster's database "postgres".
func (c *cluster) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, c.url("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// startCluster makes a cluster with initdb and starts postgres on it,
// or fails t (skips it when PostgreSQL is missing, except in CI).
func startCluster(t testing.TB) *cluster {
	t.Helper()
	bin := binDir()
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("PostgreSQL is not installed (Debian: apt-get install postgresql)")
		}
		t.Skip("PostgreSQL is not installed (Debian: apt-get install postgresql)")
	}
	dir, err := makeClusterDir()
	if err != nil {
		t.Fatal(err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(dir)
		}
	}()
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
	if err := makeData(command, bin, data, cred); err != nil {
		t.Fatal(err)
	}
	gone, stop, err := serve(t, command, data, dir)
	if err != nil {
		t.Fatal(err)
	}
	ok = true
	return &cluster{dir: dir, gone: gone, stop: func() { stop(); os.RemoveAll(dir) }}
}

// serve starts postgres on the cluster in data, with its socket in dir
// and no TCP listener, and waits until it answers on that socket. It
// returns a channel closed when the server exits and what stops it, or
// an error with the server's output when it exited first or did not
// answer in time.
func serve(t testing.TB, command func(string, ...string) *exec.Cmd, data, dir string) (gone chan struct{}, stop func(), err error) {
	var out syncBuffer
	srv := command("postgres", "-D", data, "-c", "listen_addresses=", "-p", strconv.Itoa(port), "-k", dir,
		"-c", "fsync=off", "-c", "max_connections=200") // the tests of a package at once
	srv.Stdout, srv.Stderr = &out, &out
	if srv.SysProcAttr == nil {
		srv.SysProcAttr = &syscall.SysProcAttr{}
	}
	dieWithUs(srv.SysProcAttr)
	if err := srv.Start(); err != nil {
		t.Fatalf("start postgres: %v", err)
	}
	exited := make(chan error, 1)
	gone = make(chan struct{})
	go func() { exited <- srv.Wait(); close(gone) }()
	stop = func() {
		_ = srv.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = srv.Process.Kill()
			<-exited
		}
	}
	c := &cluster{dir: dir}
	// A bound for a server that never answers; a loaded machine may take
	// many seconds to start one, and this costs a passing test nothing.
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, c.url("postgres"))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return gone, stop, nil
		}
		select {
		case err := <-exited:
			return nil, nil, fmt.Errorf("postgres exited: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nil, fmt.Errorf("postgres did not answer in 60 s: %v\n%s", err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
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
