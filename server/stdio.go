package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/audit"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// drainTimeout bounds how long requests still in flight may finish after
// the client closed stdin.
const drainTimeout = 5 * time.Second

// StdioOptions tune the stdio face; zero values mean the defaults.
type StdioOptions struct {
	// WriteTimeout bounds one write to the client
	// (jsonrpc.DefaultWriteTimeout); a client that stops reading stdout
	// for longer is taken to be gone.
	WriteTimeout time.Duration
	// SessionID names the session (default "stdio"): the shared hub
	// serves many stdio clients, each through its bridge, and gives each
	// an id of its own.
	SessionID string
	// Profile is the config's profile the client sees, "" for the whole
	// config (see SessionOptions.Profile).
	Profile string
}

// ServeStdio serves one client on in and out until in ends, the client
// stops reading, or ctx is done. Every request runs on its own goroutine,
// so a slow tool call never holds up another; messages go out through a
// bounded outbox (see jsonrpc.Conn), each write with a deadline.
func (h *Hub) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	return h.ServeStdioWith(ctx, in, out, StdioOptions{})
}

// ServeStdioWith is ServeStdio with options.
func (h *Hub) ServeStdioWith(ctx context.Context, in io.Reader, out io.Writer, opts StdioOptions) error {
	if f, ok := out.(*os.File); ok {
		if fi, err := f.Stat(); err == nil {
			h.stdioOut.Store(&fi)
			if h.snapshot().audit.On(fi) {
				return fmt.Errorf("audit trail: %s %w", h.config().AuditPath(), audit.ErrOnStdout)
			}
		}
	}
	id := opts.SessionID
	if id == "" {
		id = "stdio"
	}
	// The session is made before its connection, which is handed its
	// methods themselves: a message goes from the connection to the
	// session with no step of the face's between. It is listed (and so
	// reachable) once its Peer, the connection, is set.
	sess, err := h.prepare(id, "stdio", opts.Profile, nil, nil)
	if err != nil {
		return err
	}
	maxSize := h.Settings().MaxMessageSize
	conn := jsonrpc.NewConn(jsonrpc.NewLineStream(in, out, maxSize), jsonrpc.ConnOptions{
		MaxMessageSize: maxSize,
		MaxInflight:    h.Settings().SessionInflight,
		WriteTimeout:   opts.WriteTimeout,
		Admit:          h.inflight.Admit(""), // the local user's: every stdio session is theirs
		Handle:         sess.Request,
		Notify:         sess.Notification,
		Refused: func(err error, msg []byte) {
			h.logger.Warn("refused a message from the client", "err", err, "bytes", len(msg))
		},
		Panicked: h.panics.Recovered, // beyond Session.Request's own boundary
	})
	sess.sess.peer = &connPeer{conn: conn}
	if err := h.enlist(sess); err != nil {
		return err
	}
	defer sess.Close()
	conn.Start()

	select {
	case <-conn.Done():
		// The client closed its side: let requests in flight finish for
		// a moment, then cancel them.
		err = conn.Err()
		sess.endListens()
		drainCtx, stop := context.WithTimeout(context.Background(), drainTimeout)
		conn.WaitIdle(drainCtx)
		stop()
	case <-ctx.Done():
		// We are told to stop: requests in flight are cancelled at once
		// (and answered with an error), new ones refused.
		err = ctx.Err()
	}
	conn.Close()
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	if errors.Is(err, jsonrpc.ErrWrite) {
		h.logger.Warn("the client stopped reading; stopping", "err", err)
		return nil
	}
	return err
}

// connPeer reaches a client over a jsonrpc.Conn.
type connPeer struct{ conn *jsonrpc.Conn }

func (p *connPeer) Notify(_ context.Context, msg []byte) { _ = p.conn.NotifyRaw(msg) }

func (p *connPeer) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	res, err := p.conn.Call(ctx, method, params)
	if errors.Is(err, jsonrpc.ErrClosed) {
		return nil, ErrClientGone
	}
	return res, err
}

// Listening does nothing: a listen's messages go down the one stream.
func (p *connPeer) Listening(context.Context) {}

func (p *connPeer) Dropped() uint64 { return p.conn.Dropped() }

func (p *connPeer) Answering() int { return p.conn.Inflight() }

// Client is "": a stdio client is the one client of its connection.
func (p *connPeer) Client() string { return "" }
