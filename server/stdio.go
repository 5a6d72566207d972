package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
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
	sess := newSession("stdio")
	if err := h.mcp.RegisterSession(ctx, sess); err != nil {
		return fmt.Errorf("register session: %w", err)
	}
	defer h.mcp.UnregisterSession(ctx, sess.id)

	reqCtx, cancelRequests := context.WithCancel(h.mcp.WithContext(ctx, sess))
	defer cancelRequests()
	w := &lineWriter{w: out}
	c := &stdioConn{hub: h, w: w, inflight: map[string]context.CancelFunc{}, outgoing: map[string]chan *envelope{}}
	sess.requester = c.request

	notifyDone := make(chan struct{})
	go func() {
		defer close(notifyDone)
		for {
			select {
			case n := <-sess.notifications:
				if b, err := json.Marshal(n); err == nil {
					w.write(b)
				}
			case <-reqCtx.Done():
				return
			}
		}
	}()

	// Lines are handled on the reading goroutine itself: one goroutine
	// hand-off fewer per request than a channel to a dispatch loop.
	readErr := make(chan error, 1)
	go func() {
		readErr <- jsonrpc.ReadLines(in, h.config().Settings.MaxMessageSize, func(line []byte) { c.receive(reqCtx, line) }, h.tooLarge(w))
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
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drainTimeout):
		cancelRequests()
		<-done
	}
	cancelRequests()
	<-notifyDone
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

// stdioConn is the state of one stdio client connection.
type stdioConn struct {
	hub *Hub
	w   *lineWriter
	wg  sync.WaitGroup

	mu       sync.Mutex                    // guards inflight and outgoing
	inflight map[string]context.CancelFunc // requests from the client, by id
	outgoing map[string]chan *envelope     // requests to the client, by id
	nextID   atomic.Int64
}

// request sends the client a request and waits for its answer.
func (c *stdioConn) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := json.RawMessage(fmt.Sprintf(`"dynamic-mcp-%d"`, c.nextID.Add(1)))
	ch := make(chan *envelope, 1)
	c.mu.Lock()
	c.outgoing[string(id)] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.outgoing, string(id))
		c.mu.Unlock()
	}()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	c.w.write(b)
	select {
	case m := <-ch:
		if len(m.Error) > 0 {
			var e rpcError
			_ = json.Unmarshal(m.Error, &e)
			return nil, fmt.Errorf("client answered %s with error %d: %s", method, e.Code, e.Message)
		}
		return m.Result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// receive handles one line from the client.
func (c *stdioConn) receive(ctx context.Context, line []byte) {
	if len(line) == 0 {
		return
	}
	if line[0] == '[' {
		c.w.write(errorResponse(nil, errorf(codeInvalidRequest, "batch requests are not supported")))
		return
	}
	if err := jsonrpc.Check(line, jsonrpc.MaxDepth); err != nil {
		c.hub.logger.Warn("refused a message from the client", "err", err)
		c.w.write(refusal(line, err))
		return
	}
	var msg envelope
	if err := json.Unmarshal(line, &msg); err != nil {
		c.w.write(errorResponse(nil, errorf(codeInvalidRequest, "Invalid Request: "+err.Error())))
		return
	}
	switch {
	case msg.isRequest():
		if msg.JSONRPC != "2.0" {
			c.w.write(errorResponse(msg.ID, errorf(codeInvalidRequest, `jsonrpc must be "2.0"`)))
			return
		}
		key := string(msg.ID)
		rctx, cancel := context.WithCancel(ctx)
		c.mu.Lock()
		c.inflight[key] = cancel
		c.mu.Unlock()
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			defer c.forget(key, cancel)
			resp := c.hub.handle(rctx, &msg, line)
			if rctx.Err() != nil && ctx.Err() == nil {
				return // cancelled by the client: no response, as the spec asks
			}
			c.w.write(resp)
		}()
	case msg.isNotification():
		if msg.Method == "notifications/cancelled" {
			c.cancel(msg.Params)
		}
		c.hub.mcp.HandleMessage(ctx, line)
	case hasID(msg.ID):
		c.mu.Lock()
		ch := c.outgoing[string(msg.ID)]
		delete(c.outgoing, string(msg.ID))
		c.mu.Unlock()
		if ch == nil {
			c.hub.logger.Debug("response from client to no pending request", "id", string(msg.ID))
			return
		}
		ch <- &msg
	default:
		c.w.write(errorResponse(nil, errorf(codeInvalidRequest, "not a JSON-RPC request, notification or response")))
	}
}

// refusal answers a message that broke a framing rule: -32700 when it is
// not JSON, -32600 when too deep or with a repeated key. The answer carries
// the message's id where the id itself is not in doubt.
func refusal(line []byte, err error) []byte {
	if errors.Is(err, jsonrpc.ErrNotJSON) {
		return errorResponse(nil, errorf(codeParseError, "Parse error: "+err.Error()))
	}
	var id json.RawMessage
	var ce *jsonrpc.CheckError
	if !errors.As(err, &ce) || ce.Depth != 1 || !strings.EqualFold(ce.Key, "id") {
		id = jsonrpc.IDOf(line)
	}
	return errorResponse(id, errorf(codeInvalidRequest, "Invalid Request: "+err.Error()))
}

func (c *stdioConn) forget(key string, cancel context.CancelFunc) {
	cancel()
	c.mu.Lock()
	delete(c.inflight, key)
	c.mu.Unlock()
}

// cancel cancels the request a notifications/cancelled names.
func (c *stdioConn) cancel(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	c.mu.Lock()
	cancel := c.inflight[string(p.RequestID)]
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// lineWriter writes whole messages, one per line, from many goroutines.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *lineWriter) write(msg []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	buf := make([]byte, 0, len(msg)+1)
	buf = append(append(buf, msg...), '\n')
	_, _ = w.w.Write(buf)
}
