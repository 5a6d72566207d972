package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// sharedEnvVar overrides settings.shared: "off" keeps one hub per process
// (as serve --standalone), "auto" shares one hub per config.
const sharedEnvVar = "DYNAMIC_MCP_SHARED"

// hubStartTimeout bounds how long a bridge waits for the hub it started
// to answer (it listens before it opens a store or any upstream).
const hubStartTimeout = 15 * time.Second

// errStandalone tells serve to run the hub in this process after all: the
// running hub is of another version, or none could be started.
var errStandalone = errors.New("run standalone")

// errHubGone is the bridge's end when the hub went away while the client
// was still there: the client sees its server exit non-zero, as when a
// process crashes.
var errHubGone = errors.New("the shared hub stopped")

// wantShared says whether serve on stdio joins the config's shared hub.
func wantShared(cfg *config.Config, standalone bool) bool {
	if standalone || !local.Supported {
		return false
	}
	switch os.Getenv(sharedEnvVar) {
	case "off":
		return false
	case "auto":
		return true
	}
	return cfg.Settings.Shared != config.SharedOff
}

// bridge connects the client on stdin and stdout to the shared hub for
// cfg, starting it if none runs, and copies bytes both ways until the
// client closes stdin and the hub has answered, or the hub goes away.
// It returns errStandalone, having read nothing of stdin, when the client
// should be served in this process instead; it shows the client the
// config's profile (serve --profile, "" for the whole config). With uiAddr
// (serve --ui), it first asks the hub to serve its inspector there and
// prints the page's URL and token to stderr.
func bridge(ctx context.Context, cfg *config.Config, profile, logLevel, uiAddr string, logger *slog.Logger, stdin io.Reader, stdout, stderr io.Writer) error {
	paths, err := local.PathsFor(cfg.Path, cfg.StateDir)
	if err != nil {
		logger.Warn("no shared hub: serving in this process", "err", err)
		return errStandalone
	}
	// A client's stdin and stdout are pipes (or sockets): the hub is
	// passed them and talks to the client directly, and the bridge only
	// waits. A terminal is not passed (the hub makes what it is passed
	// non-blocking, which a shell sharing the terminal would see): the
	// bridge copies then.
	inFile, inOK := stdin.(*os.File)
	outFile, outOK := stdout.(*os.File)
	pass := inOK && outOK && isPipe(inFile) && isPipe(outFile)
	conn, br, err := joinHub(ctx, cfg, paths, pass, profile, logLevel, logger)
	if err != nil {
		if notJoinable(err) {
			logger.Warn("not joining the shared hub: serving in this process", "err", err)
		} else {
			logger.Warn("could not reach or start the shared hub: serving in this process", "err", err)
		}
		return errStandalone
	}
	if uiAddr != "" {
		ui, err := askUI(ctx, paths, uiAddr)
		if err != nil {
			conn.Close()
			return fmt.Errorf("--ui %s: %w", uiAddr, err)
		}
		printUI(stderr, ui.URL, ui.Token)
	}
	var end error
	if pass {
		end = waitPassed(ctx, conn, br, inFile, outFile)
	} else {
		end = copyBoth(ctx, conn, br, stdin, stdout)
	}
	if errors.Is(end, errHubGone) {
		return &hubGoneError{log: paths.Log, err: end}
	}
	return end
}

// hubGoneError is errHubGone as the client's user reads it (in the
// client's log of the server): what ended the hub, where its log is, and
// what starts a new one. How the socket ended (EOF, a reset) says nothing
// more and is left out.
type hubGoneError struct {
	log string
	err error
}

func (e *hubGoneError) Error() string {
	return "the shared hub stopped (dynamic-mcp stop, or a crash: see " + e.log + "); reconnect this client to start a new one"
}

func (e *hubGoneError) Unwrap() error { return e.err }

// waitPassed passes stdin and stdout to the hub and waits for the
// session's end: Done when the client closed stdin, errHubGone when the
// hub went away first. A signal to the bridge ends the session (the hub
// sees the connection close).
func waitPassed(ctx context.Context, conn *net.UnixConn, br *bufio.Reader, stdin, stdout *os.File) error {
	defer conn.Close()
	if err := local.SendFiles(conn, stdin, stdout); err != nil {
		return err
	}
	ended := make(chan error, 1)
	go func() {
		var done local.Done
		err := local.ReadLine(br, &done)
		if err == nil && !done.Done {
			err = errors.New("the hub said something else")
		}
		ended <- err
	}()
	// From here the bridge only waits: what the start touched, the
	// config's parse and every package's initialiser, is not needed
	// again. Given back last, once the goroutine that waits has started,
	// so that nothing the bridge still does maps it in again.
	releaseMemory()
	select {
	case err := <-ended:
		if err != nil {
			return fmt.Errorf("%w: %w", errHubGone, err)
		}
		return nil
	case <-ctx.Done():
		conn.Close()
		<-ended
		return nil
	}
}

// joinHub connects to the hub for paths and opens a session; when none
// runs it takes the lock, looks again, and starts one. The lock makes
// bridges started at once start one hub; a socket file left by a hub that
// crashed answers nobody and is replaced by the new hub. A hub that takes
// the connection and answers nothing is asked once more after any start
// in progress (its starter holds the lock until it answers); a second
// silence is a hub stopped or stuck, which no new hub could replace.
func joinHub(ctx context.Context, cfg *config.Config, paths local.Paths, pass bool, profile, logLevel string, logger *slog.Logger) (*net.UnixConn, *bufio.Reader, error) {
	h := local.Hello{Op: local.OpSession, Pass: pass, Profile: profile, Env: local.EnvDigests(cfg.EnvUses, os.LookupEnv)}
	var last error
	// A hub that is stopping (idle) may take a connection and close it:
	// then it is looked for, and started, again.
	for range 3 {
		conn, br, err := hello(ctx, paths, h)
		if err == nil || notJoinable(err) {
			return conn, br, err
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// Not under the lock: bridges that find a stuck hub at
			// once do not queue on it.
			if err := waitForStart(ctx, paths); err != nil {
				return nil, nil, err
			}
			conn, br, err = hello(ctx, paths, h)
			if err == nil || notJoinable(err) {
				return conn, br, err
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, nil, fmt.Errorf("%w: the shared hub took the connection and did not answer within %s, twice: it is stopped or stuck, or the machine is very busy; `dynamic-mcp stop%s` stops it", err, helloTimeout, configArg(cfg.Path))
			}
		}
		last = err
		lockCtx, cancel := context.WithTimeout(ctx, hubStartTimeout)
		unlock, err := local.Lock(lockCtx, paths)
		cancel()
		if err != nil {
			return nil, nil, err
		}
		conn, br, err = hello(ctx, paths, h)
		if err == nil || notJoinable(err) {
			unlock()
			return conn, br, err
		}
		logger.Info("starting the shared hub", "socket", paths.Socket, "log", paths.Log)
		err = startSharedHub(ctx, cfg, paths, logLevel, logger)
		unlock()
		if err != nil {
			return nil, nil, err
		}
	}
	conn, br, err := hello(ctx, paths, h)
	if err != nil && !notJoinable(err) {
		return nil, nil, fmt.Errorf("%w (before: %w)", err, last)
	}
	return conn, br, err
}

// waitForStart waits until no bridge holds the start lock: a hub being
// started answers once it is let go.
func waitForStart(ctx context.Context, paths local.Paths) error {
	ctx, cancel := context.WithTimeout(ctx, hubStartTimeout)
	defer cancel()
	unlock, err := local.Lock(ctx, paths)
	if err != nil {
		return err
	}
	unlock()
	return nil
}

// notJoinable reports whether err is a running hub's refusal that
// another try would get again: a hub of another version, or of other
// values of the config's variables; or a socket that may be another
// user's, which gets no Hello and no message of the client's. The bridge
// serves in its own process.
func notJoinable(err error) bool {
	return errors.Is(err, local.ErrVersion) || errors.Is(err, local.ErrEnv) || errors.Is(err, local.ErrNotTrusted)
}

// askUI asks the hub to serve its inspector on addr.
func askUI(ctx context.Context, paths local.Paths, addr string) (*local.UI, error) {
	c, err := local.Dial(ctx, paths)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	reply, _, err := sayHello(c, local.Hello{Op: local.OpUI, Addr: addr})
	if err != nil {
		return nil, err
	}
	if reply.UI == nil {
		return nil, errors.New("the hub did not say where its inspector is")
	}
	return reply.UI, nil
}

// hello connects to the hub and asks op; for OpSession the connection is
// then the session's, read through the returned reader.
func hello(ctx context.Context, paths local.Paths, h local.Hello) (*net.UnixConn, *bufio.Reader, error) {
	c, err := local.Dial(ctx, paths)
	if err != nil {
		return nil, nil, err
	}
	_, br, err := sayHello(c, h)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, br, nil
}

// helloTimeout bounds a hello and the hub's reply to it.
const helloTimeout = 5 * time.Second

// sayHello says h (with this build's version) on c and reads the hub's
// Reply.
func sayHello(c net.Conn, h local.Hello) (local.Reply, *bufio.Reader, error) {
	_ = c.SetDeadline(time.Now().Add(helloTimeout))
	defer c.SetDeadline(time.Time{})
	h.Version = version
	if err := local.WriteLine(c, h); err != nil {
		return local.Reply{}, nil, fmt.Errorf("hello: %w", err)
	}
	br := bufio.NewReaderSize(c, 64<<10)
	var reply local.Reply
	if err := local.ReadLine(br, &reply); err != nil {
		return local.Reply{}, nil, fmt.Errorf("hello: %w", err)
	}
	if reply.Version != version {
		return reply, nil, fmt.Errorf("%w: the hub (pid %d) is %s, this is %s", local.ErrVersion, reply.PID, reply.Version, version)
	}
	if rest, ok := strings.CutPrefix(reply.Error, local.ErrEnv.Error()); ok {
		return reply, nil, fmt.Errorf("%w%s", local.ErrEnv, rest)
	}
	if reply.Error != "" {
		return reply, nil, fmt.Errorf("the hub refused: %s", reply.Error)
	}
	return reply, br, nil
}

// maxHubLog is the size of the shared hub's log file past which a hub
// starting moves it to path.1 (replacing the one before): a hub started on
// demand and stopped when idle, for months, keeps at most about twice it.
const maxHubLog = 10 << 20

// moveLargeLog moves the log file at path aside when it is over maxHubLog.
// Called under the start lock, before the new hub opens it.
func moveLargeLog(path string, logger *slog.Logger) {
	fi, err := os.Lstat(path) // a symlink is the user's: left as it is
	if err != nil || !fi.Mode().IsRegular() || fi.Size() <= maxHubLog {
		return
	}
	if err := os.Rename(path, path+".1"); err != nil {
		logger.Warn("the shared hub's log file is large and could not be moved aside: appending to it", "log", path, "err", err)
	}
}

// startSharedHub starts the shared hub for cfg in the background, detached from
// this process (its own session, its stdin and stdout /dev/null, its log
// appended to paths.Log), and waits until it answers on the socket.
func startSharedHub(ctx context.Context, cfg *config.Config, paths local.Paths, logLevel string, logger *slog.Logger) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("start the hub: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(paths.Log), 0o700); err != nil {
		return fmt.Errorf("start the hub: %w", err)
	}
	moveLargeLog(paths.Log, logger)
	// O_NONBLOCK: a FIFO at the path with no reader fails the open at
	// once, where it would hold the bridge (and the start lock) for ever.
	logFile, err := os.OpenFile(paths.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return fmt.Errorf("start the hub: %w", err)
	}
	defer logFile.Close()
	cfgPath, err := filepath.Abs(cfg.Path)
	if err != nil {
		return fmt.Errorf("start the hub: %w", err)
	}
	// The hub runs in the config's directory and the user's login
	// environment, whichever client started it (see hubEnv).
	env := hubEnv(ctx, exe, os.Environ(), cfg.EnvUses, logger)
	exited, err := spawnDetached(exe, []string{"serve", "--hub", "-c", cfgPath, "--log-level", logLevel, "--log-file", paths.Log},
		filepath.Dir(cfgPath), env, logFile)
	if err != nil {
		return fmt.Errorf("start the hub: %w", err)
	}
	deadline := time.NewTimer(hubStartTimeout)
	defer deadline.Stop()
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		// Until it answers, not only listens: it listens before it
		// opens a store (which may take seconds), and bridges that come
		// meanwhile wait on the lock this one holds.
		if c, err := local.Dial(ctx, paths); err == nil {
			_, _, err = sayHello(c, local.Hello{Op: local.OpStatus})
			c.Close()
			if err == nil || notJoinable(err) {
				return nil
			}
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case err := <-exited:
			t.Stop()
			return fmt.Errorf("the hub exited at start (%v): see %s", err, paths.Log)
		case <-deadline.C:
			t.Stop()
			return fmt.Errorf("the hub did not answer within %s: see %s", hubStartTimeout, paths.Log)
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// copyBoth copies the client's stdin to the hub and the hub's bytes
// (buffered in br) to stdout. When stdin ends, the bridge closes its
// write side and returns when the hub has closed the session; when the
// hub's side ends first, the hub went away: errHubGone.
func copyBoth(ctx context.Context, conn *net.UnixConn, br *bufio.Reader, stdin io.Reader, stdout io.Writer) error {
	defer conn.Close()
	up := make(chan error, 1)
	// This goroutine ends when stdin ends or the socket refuses a write;
	// when the hub goes first it may still be blocked reading stdin,
	// which only the process's exit ends (a read of stdin cannot be
	// cancelled), so it is not waited for then.
	// stdinEnded is set before the hub can see the end, so that the
	// hub's close that answers it is never taken for the hub going away.
	var stdinEnded atomic.Bool
	go func() {
		_, err := io.Copy(conn, stdin)
		stdinEnded.Store(true)
		_ = conn.CloseWrite()
		up <- err
	}()
	down := make(chan error, 1)
	go func() {
		_, err := io.Copy(stdout, br)
		down <- err
	}()
	// From here the bridge copies bytes: what the start touched is not
	// needed again (see waitPassed).
	releaseMemory()
	var stdinDone bool
	for {
		select {
		case <-up:
			stdinDone = true
			up = nil
		case err := <-down:
			if !stdinDone && !stdinEnded.Load() {
				if err == nil {
					return errHubGone
				}
				return fmt.Errorf("%w: %w", errHubGone, err)
			}
			return nil
		case <-ctx.Done():
			// A signal: the session ends as if the client had left.
			_ = conn.CloseWrite()
			conn.Close()
			<-down
			return nil
		}
	}
}

// isPipe reports whether f is a pipe or a socket.
func isPipe(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0
}
