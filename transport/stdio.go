package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// Stdio is mcp-go's transport interface over a supervised child's stdin
// and stdout, carried by a jsonrpc.Conn: the framing rules mcp-go's own
// stdio transport lacks (size and nesting limits, no repeated keys,
// non-JSON lines logged and skipped), replies to unknown or finished
// requests dropped, a deadline on every write (a child that stops reading
// its stdin ends the session, and is restarted), and at most
// jsonrpc.DefaultMaxInflight of the child's own requests at once. When the
// child exits, every pending request fails at once with how it ended.
type Stdio struct {
	proc    *Process
	r       io.Reader
	w       io.WriteCloser
	maxSize int
	logger  *slog.Logger
	// writeTimeout bounds a write to the child (jsonrpc.DefaultWriteTimeout).
	writeTimeout time.Duration

	startOnce sync.Once
	conn      *jsonrpc.Conn // set by Start
	done      chan struct{} // closed once the session is over and err set
	err       error

	handlerMu sync.RWMutex // guards the handlers
	onNotify  func(mcp.JSONRPCNotification)
	onRaw     func(method string, params json.RawMessage)
	onRequest mcptransport.RequestHandler
}

var (
	_ mcptransport.Interface              = (*Stdio)(nil)
	_ mcptransport.BidirectionalInterface = (*Stdio)(nil)
)

// NewStdio speaks MCP over proc's stdin and stdout.
func NewStdio(proc *Process, maxSize int, logger *slog.Logger) *Stdio {
	t := newStdio(proc.Stdout(), proc.Stdin(), maxSize, logger)
	t.proc = proc
	return t
}

func newStdio(r io.Reader, w io.WriteCloser, maxSize int, logger *slog.Logger) *Stdio {
	return &Stdio{r: r, w: w, maxSize: maxSize, logger: logger, done: make(chan struct{})}
}

// Start starts the conversation. Calling it again does nothing.
func (t *Stdio) Start(context.Context) error {
	t.startOnce.Do(func() {
		t.conn = jsonrpc.NewConn(jsonrpc.NewLineStream(t.r, t.w, t.maxSize), jsonrpc.ConnOptions{
			MaxMessageSize: t.maxSize,
			WriteTimeout:   t.writeTimeout,
			Handle:         t.serve,
			Notify:         t.notification,
			Refused:        t.refused,
			Panicked: func(method string, v any, stack []byte) {
				t.logger.Error("handling a message of the upstream panicked", "method", method, "panic", fmt.Sprint(v), "stack", string(stack))
			},
			Quiet: true,
		})
		t.conn.Start()
		go t.watch()
	})
	return nil
}

// watch waits for the session to end and says how: a child that closed
// its stdout has almost always exited, so it waits a moment for it.
func (t *Stdio) watch() {
	<-t.conn.Done()
	err := t.conn.Err()
	switch {
	case errors.Is(err, jsonrpc.ErrWriteTimeout):
		err = errors.New("stopped reading its stdin (a write timed out)")
	case t.proc != nil:
		select {
		case <-t.proc.Done():
			err = t.proc.ExitError()
		case <-time.After(2 * time.Second):
			if errors.Is(err, io.EOF) {
				err = errors.New("closed its stdout")
			}
		}
	}
	t.err = err
	close(t.done)
}

// Done is closed once the session is over.
func (t *Stdio) Done() <-chan struct{} { return t.done }

// Err says why the session is over (how the child ended); nil while open.
func (t *Stdio) Err() error {
	select {
	case <-t.done:
		return t.err
	default:
		return nil
	}
}

func (t *Stdio) refused(err error, line []byte) {
	if errors.Is(err, jsonrpc.ErrNotJSON) {
		t.logger.Warn("upstream wrote a line that is not JSON-RPC; skipped", "line", preview(line))
		return
	}
	t.logger.Error("upstream message refused", "err", err, "start", preview(line))
}

func preview(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

func (t *Stdio) notification(m *jsonrpc.Message) {
	t.handlerMu.RLock()
	h, raw := t.onNotify, t.onRaw
	t.handlerMu.RUnlock()
	if raw != nil {
		raw(m.Method, m.Params)
		return
	}
	if h == nil {
		return
	}
	var n mcp.JSONRPCNotification
	if err := json.Unmarshal(m.Raw, &n); err != nil {
		t.logger.Warn("upstream sent a malformed notification; skipped", "err", err)
		return
	}
	h(n)
}

// serve answers a request the child sent (ping, roots/list, sampling ...).
func (t *Stdio) serve(ctx context.Context, m *jsonrpc.Message) (json.RawMessage, error) {
	t.handlerMu.RLock()
	h := t.onRequest
	t.handlerMu.RUnlock()
	if h == nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method not found: "+m.Method)
	}
	var id mcp.RequestId
	if err := json.Unmarshal(m.ID, &id); err != nil {
		return nil, err
	}
	req := mcptransport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Method: m.Method}
	if m.Params != nil {
		req.Params = m.Params
	}
	resp, err := h(ctx, req)
	switch {
	case err != nil:
		return nil, err
	case resp == nil:
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "no answer to "+m.Method)
	case resp.Error != nil:
		return nil, &jsonrpc.Error{Code: resp.Error.Code, Message: resp.Error.Message, Data: resp.Error.Data}
	}
	return resp.Result, nil
}

// SendRequest sends req and waits for its reply, ctx, or the child's end.
// The child sees an id of the connection's own; the reply carries req's.
func (t *Stdio) SendRequest(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
	if t.conn == nil {
		return nil, errors.New("transport not started")
	}
	params, err := jsonrpc.Params(req.Params)
	if err != nil {
		return nil, err
	}
	res, err := t.conn.Call(ctx, req.Method, params)
	var rpcErr *jsonrpc.Error
	switch {
	case errors.As(err, &rpcErr):
		details := &mcp.JSONRPCErrorDetails{Code: rpcErr.Code, Message: rpcErr.Message, Data: rpcErr.Data}
		return &mcptransport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: req.ID, Error: details}, nil
	case errors.Is(err, jsonrpc.ErrClosed):
		return nil, t.endErr(ctx, err)
	case err != nil:
		return nil, err
	}
	return &mcptransport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: req.ID, Result: res}, nil
}

// endErr is how the session ended, once watch knows, for a request that
// failed because it did.
func (t *Stdio) endErr(ctx context.Context, err error) error {
	select {
	case <-t.done:
		return t.err
	case <-ctx.Done():
		return err
	}
}

// SendNotification sends n to the child; it never blocks (a child that
// is behind loses notifications, counted by the connection).
func (t *Stdio) SendNotification(ctx context.Context, n mcp.JSONRPCNotification) error {
	if t.conn == nil {
		return errors.New("transport not started")
	}
	params, err := jsonrpc.Params(n.Params)
	if err != nil {
		return err
	}
	if len(n.Params.AdditionalFields) == 0 && n.Params.Meta == nil {
		params = nil
	}
	if err := t.conn.Notify(n.Method, params); err != nil {
		if errors.Is(err, jsonrpc.ErrClosed) {
			return t.endErr(ctx, err)
		}
		return fmt.Errorf("notify %s: %w", n.Method, err)
	}
	return nil
}

// SetNotificationHandler sets who hears the child's notifications; it is
// called on the reading goroutine and must not block.
func (t *Stdio) SetNotificationHandler(h func(mcp.JSONRPCNotification)) {
	t.handlerMu.Lock()
	defer t.handlerMu.Unlock()
	t.onNotify = h
}

// SetRawNotificationHandler sets who hears the child's notifications as
// they came, params byte for byte (nil when absent), in place of the
// handler mcp-go's client sets. It is called on the reading goroutine and
// must not block.
func (t *Stdio) SetRawNotificationHandler(h func(method string, params json.RawMessage)) {
	t.handlerMu.Lock()
	defer t.handlerMu.Unlock()
	t.onRaw = h
}

// SetRequestHandler sets who answers the child's requests.
func (t *Stdio) SetRequestHandler(h mcptransport.RequestHandler) {
	t.handlerMu.Lock()
	defer t.handlerMu.Unlock()
	t.onRequest = h
}

// Close ends the conversation and closes the child's stdin, which asks it
// to exit; stopping it for good is the Process's ladder. Requests the child
// sent us are cancelled.
func (t *Stdio) Close() error {
	if t.conn == nil {
		return t.w.Close()
	}
	return t.conn.Close()
}

// GetSessionId is empty: stdio has no session id.
func (t *Stdio) GetSessionId() string { return "" }
