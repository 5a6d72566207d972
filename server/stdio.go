package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"

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
	sess := newSession("stdio", "stdio")
	base, cancel := context.WithCancel(ctx)
	defer cancel()
	conn := jsonrpc.NewConn(in, out, jsonrpc.ConnOptions{
		MaxMessageSize: h.config().Settings.MaxMessageSize,
		MaxInflight:    h.config().Settings.SessionInflight,
		WriteTimeout:   opts.WriteTimeout,
		Handle: func(ctx context.Context, m *jsonrpc.Message) (json.RawMessage, error) {
			return h.serveRequest(ctx, sess, m)
		},
		Notify: func(m *jsonrpc.Message) { h.serveNotification(base, sess, m) },
		Refused: func(err error, msg []byte) {
			h.logger.Warn("refused a message from the client", "err", err, "bytes", len(msg))
		},
	})
	sess.peer = &connPeer{conn: conn}
	if err := h.addSession(base, sess); err != nil {
		return err
	}
	defer h.removeSession(context.Background(), sess)
	conn.Start()

	var err error
	select {
	case <-conn.Done():
		// The client closed its side: let requests in flight finish for
		// a moment, then cancel them.
		err = conn.Err()
		drainCtx, stop := context.WithTimeout(context.Background(), drainTimeout)
		conn.WaitIdle(drainCtx)
		stop()
	case <-ctx.Done():
		// We are told to stop: requests in flight are cancelled at once
		// (and answered with an error), new ones refused.
		err = ctx.Err()
	}
	conn.Close()
	cancel()
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

func (p *connPeer) notify(_ context.Context, msg []byte) { _ = p.conn.NotifyRaw(msg) }

func (p *connPeer) call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	res, err := p.conn.Call(ctx, method, params)
	if errors.Is(err, jsonrpc.ErrClosed) {
		return nil, errClientGone
	}
	return res, err
}

func (p *connPeer) dropped() uint64 { return p.conn.Dropped() }

func (p *connPeer) answering() int { return p.conn.Inflight() }
