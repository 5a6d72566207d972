// Package mcplocal is the shared hub's face for the clients of this
// machine: each connection on the hub's local socket (transport/local)
// is a bridge from one client's stdio, and after the bridge's Hello it is
// served as a stdio session of the hub (Hub.ServeStdioWith): the client's
// own initialize, capabilities, roots, log level and subscriptions are
// that session's. The face also answers status, stop, the ask to serve
// the inspector (serve --ui) and the approval inbox's ops (the CLI's
// approvals, approve, deny, revoke), and ends the hub when it has had no
// session for its idle period: those asks are no client, and do not keep
// it.
package mcplocal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/rawio"
)

// helloTimeout bounds how long a new connection may take to say Hello.
const helloTimeout = 5 * time.Second

// idleRecheck is how soon the idle timer looks again when it ran out
// while a connection had not yet said what it is (a bridge joining must
// not find the hub gone).
const idleRecheck = 100 * time.Millisecond

// connKind is what a connection is, once its Hello says.
type connKind int

const (
	connPending connKind = iota // accepted, Hello not yet read
	connControl                 // status, stop, the inspector's ask, a refusal
	connSession                 // a client's session
)

// Options configure a Server.
type Options struct {
	// Version is the hub's build; a bridge of another build is refused.
	Version string
	// Config is the config file's path, for status.
	Config string
	// Idle is how long the hub runs with no connection before Serve
	// returns; 0 means it never stops for that.
	Idle func() time.Duration
	// UI serves the hub's inspector on a loopback address when a bridge
	// asks (serve --ui): nil refuses the ask.
	UI func(addr string) (*local.UI, error)
	// Describe adds what the hub's owner knows to a status: the
	// upstreams, the last reload, the inspector. nil adds nothing.
	Describe func(*local.Status)
	// WriteTimeout bounds one write to a client (StdioOptions.WriteTimeout;
	// 0 is jsonrpc.DefaultWriteTimeout): a client that stops reading for
	// longer is taken to be gone.
	WriteTimeout time.Duration
	// OwnPassed reads and writes a client's stdin and stdout, where they
	// are pipes, through open files of the hub's own (local.ReceiveFiles),
	// with raw system calls that wait in the poller, as the standalone
	// hub on one processor reads and writes its own (local.Polled); the
	// passed files, whose open file descriptions are the bridge's too,
	// are closed. Set where the hub runs on one processor. Otherwise, and
	// for a socket, the passed files are read as local.WaitingReader says.
	OwnPassed bool

	// rechecked, if not nil, is called (s.mu held) each time the idle
	// timer ran out while a connection had not said Hello and so looks
	// again later (idleRecheck): tests wait for it.
	rechecked func()
}

// Server serves bridges on a local listener.
type Server struct {
	hub     *server.Hub
	opts    Options
	logger  *slog.Logger
	started time.Time

	stop     chan struct{} // closed by Stop
	stopOnce sync.Once

	mu     sync.Mutex // guards conns, next and idle
	conns  map[net.Conn]connKind
	next   int         // numbers sessions: stdio-1, stdio-2 ...
	idle   *time.Timer // runs while there is no session
	idled  chan struct{}
	closed bool
}

// New builds a Server for hub.
func New(hub *server.Hub, opts Options, logger *slog.Logger) *Server {
	return &Server{hub: hub, opts: opts, logger: logger, started: time.Now(), stop: make(chan struct{}),
		conns: map[net.Conn]connKind{}, idled: make(chan struct{})}
}

// Stop makes Serve return (what `dynamic-mcp stop` asks). Calling it
// again does nothing.
func (s *Server) Stop() { s.stopOnce.Do(func() { close(s.stop) }) }

// Serve accepts bridges on ln until ctx is done, Stop is called, or no
// connection has been open for the idle period. Then it closes ln, ends
// every session (their requests in flight are cancelled) and returns when
// each connection's goroutine has.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	s.mu.Lock()
	s.armIdle()
	s.mu.Unlock()

	if k, ok := ln.(keeper); ok {
		wg.Go(func() { s.keepSocket(ctx, k) })
	}
	accepted := make(chan error, 1)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				accepted <- err
				return
			}
			if !s.add(c) {
				c.Close()
				continue
			}
			wg.Go(func() {
				defer s.remove(c)
				defer c.Close()
				s.serveConn(ctx, c)
			})
		}
	})
	var err error
	select {
	case <-ctx.Done():
	case <-s.stop:
		s.logger.Info("stopping: asked to")
	case <-s.idled:
		s.logger.Info("stopping: no client session for the idle period", "idle", s.idleFor())
	case err = <-accepted:
		err = fmt.Errorf("accept: %w", err)
	}
	s.mu.Lock()
	s.closed = true
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
	ln.Close()
	cancel() // sessions end: ServeStdioWith stops on its ctx
	return err
}

func (s *Server) idleFor() time.Duration {
	if s.opts.Idle == nil {
		return 0
	}
	return s.opts.Idle()
}

// armIdle starts the idle timer for the whole idle period; s.mu is held.
func (s *Server) armIdle() { s.armIdleFor(s.idleFor()) }

// armIdleFor starts the idle timer for d; s.mu is held. Only sessions
// keep the hub: a status, stop or inspector ask neither stops nor
// restarts the timer (`dynamic-mcp status` in a loop must not keep a hub
// nobody uses). A connection whose Hello is not read yet holds the hub
// a moment longer: it may be a bridge joining.
func (s *Server) armIdleFor(d time.Duration) {
	if d <= 0 || s.closed {
		return
	}
	s.idle = time.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed || s.count(connSession) > 0 {
			return // a session came as the timer fired: it keeps the hub
		}
		if s.count(connPending) > 0 {
			s.armIdleFor(idleRecheck)
			if s.opts.rechecked != nil {
				s.opts.rechecked()
			}
			return
		}
		s.closed = true
		close(s.idled)
	})
}

// count is the number of connections of kind k; s.mu is held.
func (s *Server) count(k connKind) int {
	n := 0
	for _, kind := range s.conns {
		if kind == k {
			n++
		}
	}
	return n
}

// add counts c as open, its Hello pending; false when the server is
// closing.
func (s *Server) add(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = connPending
	return true
}

// mark records what c is. A session stops the idle timer; false when the
// server is closing (the session is then not served).
func (s *Server) mark(c net.Conn, k connKind) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = k
	if k == connSession && s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	return true
}

func (s *Server) remove(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kind := s.conns[c]
	delete(s.conns, c)
	if kind == connSession && s.count(connSession) == 0 {
		s.armIdle()
	}
}

// serveConn answers one bridge's Hello and serves what it asks.
func (s *Server) serveConn(ctx context.Context, c net.Conn) {
	br := bufio.NewReaderSize(c, 64<<10)
	_ = c.SetReadDeadline(time.Now().Add(helloTimeout))
	var hello local.Hello
	if err := local.ReadLine(br, &hello); err != nil {
		s.mark(c, connControl)
		level := slog.LevelWarn
		if errors.Is(err, io.ErrUnexpectedEOF) {
			level = slog.LevelDebug // a bridge looking whether the hub listens
		}
		// Cut as an echo: a decoding error may quote what the line held
		// (a grant's 1 MiB duration, which time.ParseDuration quotes).
		s.logger.Log(ctx, level, "a local connection said no hello", "err", clip.EchoText(err.Error()))
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	reply := local.Reply{Version: s.opts.Version, PID: os.Getpid()}
	if hello.Op != local.OpSession || hello.Version != s.opts.Version || hello.Profile != "" && !s.hub.HasProfile(hello.Profile) {
		s.mark(c, connControl)
	}
	if hello.Version != s.opts.Version {
		reply.Error = fmt.Sprintf("%v: the hub is %s, the bridge %s", local.ErrVersion, s.opts.Version, clip.Echo(hello.Version))
		s.logger.Warn("refused a bridge of another version", "bridge", clip.Echo(hello.Version))
		_ = local.WriteLine(c, reply)
		return
	}
	switch hello.Op {
	case local.OpStatus:
		reply.Status = s.status()
		_ = local.WriteLine(c, reply)
	case local.OpStop:
		_ = local.WriteLine(c, reply)
		s.Stop()
	case local.OpUI:
		if s.opts.UI == nil {
			reply.Error = "this hub serves no inspector"
		} else if ui, err := s.opts.UI(hello.Addr); err != nil {
			reply.Error = clip.EchoText(err.Error()) // it may quote the Addr asked for
		} else {
			reply.UI = ui
		}
		_ = local.WriteLine(c, reply)
	case local.OpApprovals, local.OpApprove, local.OpDeny, local.OpRevoke:
		s.answerInbox(hello, &reply)
		_ = local.WriteLine(c, reply)
	case local.OpSession:
		if hello.Profile != "" && !s.hub.HasProfile(hello.Profile) {
			reply.Error = fmt.Sprintf("the config has no profile %q", clip.Echo(hello.Profile))
			_ = local.WriteLine(c, reply)
			return
		}
		if differ := local.EnvDiffers(hello.Env, os.LookupEnv); len(differ) > 0 {
			// Each name is cut (EnvDiffers), and so is the list: a Hello
			// may name 256.
			names := clip.EchoText(strings.Join(differ, ", "))
			reply.Error = fmt.Sprintf("%v: %s", local.ErrEnv, names)
			s.logger.Warn("refused a bridge whose environment differs", "variables", names)
			_ = local.WriteLine(c, reply)
			return
		}
		if !s.mark(c, connSession) {
			return // the hub is stopping: the bridge starts another
		}
		s.mu.Lock()
		s.next++
		id := fmt.Sprintf("stdio-%d", s.next)
		s.mu.Unlock()
		if err := local.WriteLine(c, reply); err != nil {
			return
		}
		s.logger.Info("client connected", "session", id, "passed", hello.Pass)
		var err error
		if hello.Pass {
			err = s.servePassed(ctx, c, id, hello.Profile)
		} else {
			err = s.hub.ServeStdioWith(ctx, br, c, server.StdioOptions{SessionID: id, Profile: hello.Profile})
		}
		if err != nil && !errors.Is(err, net.ErrClosed) {
			s.logger.Info("client left", "session", id, "err", err)
			return
		}
		s.logger.Info("client left", "session", id)
	default:
		reply.Error = fmt.Sprintf("unknown op %q", clip.Echo(hello.Op))
		_ = local.WriteLine(c, reply)
	}
}

// answerInbox answers the approval inbox's ops (the CLI's approvals,
// approve, deny and revoke) in reply. Who answers is the user the socket
// admits (local.Approver), whatever the Hello says: an approval is never
// taken in another's name ("ui") from a Hello.
func (s *Server) answerInbox(hello local.Hello, reply *local.Reply) {
	by := local.Approver()
	var err error
	switch hello.Op {
	case local.OpApprovals:
		l := s.hub.Inbox().Approvals()
		reply.Approvals = &l
	case local.OpApprove:
		var o approval.Options
		if hello.Grant != nil {
			o = *hello.Grant
		}
		reply.Grant, err = s.hub.Inbox().Approve(hello.ID, by, o)
	case local.OpDeny:
		err = s.hub.Inbox().Deny(hello.ID, by)
	case local.OpRevoke:
		err = s.hub.Inbox().Revoke(hello.ID, by)
	}
	if err != nil {
		reply.Error = clip.EchoText(err.Error()) // it may quote the Hello's grant (its args' globs)
	}
}

// status is what Reply.Status says now.
func (s *Server) status() *local.Status {
	st := &local.Status{Config: s.opts.Config, Started: s.started, Sessions: []local.Client{}}
	for _, si := range s.hub.Sessions().Info() {
		st.Sessions = append(st.Sessions, local.Client{ID: si.ID, Name: si.ClientName, Version: si.ClientVersion})
	}
	if s.opts.Describe != nil {
		s.opts.Describe(st)
	}
	return st
}

// servePassed serves the client on the stdin and stdout its bridge
// passed on c, and tells the bridge (Done) when the client closed stdin.
// A bridge that goes away (killed with its client, or stopping on a
// signal) ends the session: c's end is watched for that.
func (s *Server) servePassed(ctx context.Context, c net.Conn, id, profile string) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return errors.New("files passed on a connection that is not a Unix socket")
	}
	files, err := local.ReceiveFiles(uc, s.opts.OwnPassed, "client-stdin", "client-stdout")
	if err != nil {
		return err
	}
	in, out := files[0], files[1]
	var r io.ReadCloser = in
	if !rawio.Owned(in) {
		r = local.WaitingReader(in)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		// The bridge sends nothing more: a read ends when it goes, or
		// when c is closed below.
		_, _ = c.Read(make([]byte, 1))
		cancel()
	}()
	err = s.hub.ServeStdioWith(ctx, r, out, server.StdioOptions{SessionID: id, Profile: profile, WriteTimeout: s.opts.WriteTimeout})
	in.Close()
	out.Close()
	if ctx.Err() == nil {
		_ = local.WriteLine(c, local.Done{Done: true})
	}
	c.Close()
	<-watched
	return err
}
