package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// drainTimeout bounds how long requests still in flight may finish after
// the client closed stdin.
const drainTimeout = 5 * time.Second

// ServeStdio serves one client on in and out until in ends or ctx is done.
// Every request runs on its own goroutine, so a slow tool call never holds
// up another; responses and notifications are written whole, one per line.
func (h *Hub) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	w := &lineWriter{w: out}
	sess := newSession("stdio", w)
	if err := h.addSession(ctx, sess); err != nil {
		return err
	}
	defer h.removeSession(ctx, sess)

	reqCtx, cancelRequests := context.WithCancel(h.mcp.WithContext(ctx, sess))
	defer cancelRequests()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		sess.drain(reqCtx)
	}()

	var wg sync.WaitGroup
	receive := func(line []byte) {
		msg, errResp := parseMessage(line)
		switch {
		case errResp != nil:
			h.logger.Warn("refused a message from the client", "answer", string(errResp))
			w.write(errResp)
		case msg.isRequest():
			wg.Go(func() {
				if resp := h.serveRequest(reqCtx, sess, msg, line); resp != nil {
					w.write(resp)
				}
			})
		case msg.isNotification():
			h.serveNotification(reqCtx, sess, msg, line)
		default:
			h.serveResponse(sess, msg)
		}
	}
	// Lines are handled on the reading goroutine itself: one goroutine
	// hand-off fewer per request than a channel to a dispatch loop.
	readErr := make(chan error, 1)
	go func() {
		readErr <- jsonrpc.ReadLines(in, h.config().Settings.MaxMessageSize, receive, h.tooLarge(w))
	}()
	var err error
	select {
	case err = <-readErr:
	case <-ctx.Done():
		err = ctx.Err()
	}
	// The client is gone or we are stopping: let requests in flight finish
	// for a moment, then cancel them.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drainTimeout):
		cancelRequests()
		<-done
	}
	cancelRequests()
	<-drained
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func (h *Hub) tooLarge(w *lineWriter) func(int, []byte) {
	return func(n int, head []byte) {
		limit := h.config().Settings.MaxMessageSize
		h.logger.Error("message from client too large, skipped", "bytes", n, "limit", limit)
		w.write(errorResponse(jsonrpc.IDOf(head), errorf(codeInvalidRequest, fmt.Sprintf("message of %d bytes is over the %d byte limit", n, limit))))
	}
}

// lineWriter writes whole messages, one per line, from many goroutines. It
// is the stdio client's sink: everything goes down the one stdout.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *lineWriter) deliver(_ context.Context, msg []byte) { w.write(msg) }

func (w *lineWriter) write(msg []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	buf := make([]byte, 0, len(msg)+1)
	buf = append(append(buf, msg...), '\n')
	_, _ = w.w.Write(buf)
}
