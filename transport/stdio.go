package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// Stdio is mcp-go's transport interface over a supervised child's stdin
// and stdout, with the framing rules of package jsonrpc that mcp-go's own
// stdio transport lacks: a size limit, a nesting limit, no repeated keys,
// non-JSON lines logged and skipped, replies to unknown or finished
// requests dropped. When the child exits, every pending request fails at
// once with how it ended.
type Stdio struct {
	proc    *Process
	stdin   io.WriteCloser // the child's stdin
	maxSize int
	logger  *slog.Logger

	writeMu sync.Mutex // serialises whole lines on the child's stdin

	mu        sync.Mutex // guards the fields below
	pending   map[string]chan reply
	closedErr error // set once the reader has stopped
	started   bool

	handlerMu sync.RWMutex // guards the handlers
	onNotify  func(mcp.JSONRPCNotification)
	onRequest mcptransport.RequestHandler

	ctx    context.Context // for requests the child sends us
	cancel context.CancelFunc
	done   chan struct{} // closed when the reader has stopped
	wg     sync.WaitGroup
}

type reply struct {
	resp *mcptransport.JSONRPCResponse
	err  error
}

var (
	_ mcptransport.Interface              = (*Stdio)(nil)
	_ mcptransport.BidirectionalInterface = (*Stdio)(nil)
)

// NewStdio speaks MCP over proc's stdin and stdout.
func NewStdio(proc *Process, maxSize int, logger *slog.Logger) *Stdio {
	ctx, cancel := context.WithCancel(context.Background())
	t := &Stdio{
		proc: proc, maxSize: maxSize, logger: logger,
		pending: map[string]chan reply{},
		ctx:     ctx, cancel: cancel,
		done: make(chan struct{}),
	}
	if proc != nil {
		t.stdin = proc.Stdin()
	}
	return t
}

// Start starts reading the child's stdout. Calling it again does nothing.
func (t *Stdio) Start(context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started {
		return nil
	}
	t.started = true
	go t.read()
	return nil
}

// Done is closed once the child's stdout has ended.
func (t *Stdio) Done() <-chan struct{} { return t.done }

// Err says why the transport closed (how the child ended); nil while open.
func (t *Stdio) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closedErr
}

func (t *Stdio) read() {
	defer close(t.done)
	err := jsonrpc.ReadLines(t.proc.Stdout(), t.maxSize, t.receive, t.tooLarge)
	// The child closed its stdout, almost always by exiting: wait a moment
	// for it so the error can say how it ended.
	select {
	case <-t.proc.Done():
		err = t.proc.ExitError()
	case <-time.After(2 * time.Second):
		if errors.Is(err, io.EOF) {
			err = errors.New("closed its stdout")
		}
	}
	t.mu.Lock()
	t.closedErr = err
	pending := t.pending
	t.pending = map[string]chan reply{}
	t.mu.Unlock()
	for _, ch := range pending {
		ch <- reply{err: err}
	}
	t.cancel()
}

func (t *Stdio) tooLarge(size int, head []byte) {
	err := fmt.Errorf("sent a message of %d bytes, over the %d byte limit", size, t.maxSize)
	t.logger.Error("upstream message refused", "err", err)
	t.failRequest(jsonrpc.IDOf(head), err)
}

// message is any JSON-RPC message from the child.
type message struct {
	ID     *mcp.RequestId           `json:"id"`
	Method string                   `json:"method"`
	Result json.RawMessage          `json:"result"`
	Error  *mcp.JSONRPCErrorDetails `json:"error"`
}

func (t *Stdio) receive(line []byte) {
	if line[0] == '[' {
		t.logger.Warn("upstream sent a batch, which MCP does not use; skipped", "bytes", len(line))
		return
	}
	if err := jsonrpc.Check(line, jsonrpc.MaxDepth); err != nil {
		if errors.Is(err, jsonrpc.ErrNotJSON) {
			t.logger.Warn("upstream wrote a line that is not JSON-RPC; skipped", "line", preview(line))
			return
		}
		t.logger.Error("upstream message refused", "err", err)
		t.failRequest(jsonrpc.IDOf(line), fmt.Errorf("sent a message that is %w", err))
		return
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		t.logger.Warn("upstream wrote a line that is not JSON-RPC; skipped", "line", preview(line), "err", err)
		return
	}
	switch {
	case m.Method != "" && (m.ID == nil || m.ID.IsNil()):
		var n mcp.JSONRPCNotification
		if err := json.Unmarshal(line, &n); err != nil {
			t.logger.Warn("upstream sent a malformed notification; skipped", "err", err)
			return
		}
		t.handlerMu.RLock()
		h := t.onNotify
		t.handlerMu.RUnlock()
		if h != nil {
			h(n)
		}
	case m.Method != "":
		var req mcptransport.JSONRPCRequest
		if err := json.Unmarshal(line, &req); err != nil {
			t.logger.Warn("upstream sent a malformed request; skipped", "err", err)
			return
		}
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			t.serve(req)
		}()
	case m.ID != nil && !m.ID.IsNil():
		t.deliver(*m.ID, reply{resp: &mcptransport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: *m.ID, Result: m.Result, Error: m.Error}})
	default:
		t.logger.Warn("upstream sent a message that is neither request, notification nor reply; skipped", "line", preview(line))
	}
}

// deliver hands a reply to the request waiting for it. A reply nobody waits
// for (its request timed out, was cancelled, or was answered already) is
// dropped, never handed to another request.
func (t *Stdio) deliver(id mcp.RequestId, r reply) {
	t.mu.Lock()
	ch, ok := t.pending[id.String()]
	delete(t.pending, id.String())
	t.mu.Unlock()
	if !ok {
		t.logger.Debug("reply to no pending request dropped", "id", id.String())
		return
	}
	ch <- r
}

func (t *Stdio) failRequest(id json.RawMessage, err error) {
	if id == nil {
		return
	}
	var rid mcp.RequestId
	if json.Unmarshal(id, &rid) != nil {
		return
	}
	t.deliver(rid, reply{err: err})
}

// serve answers a request the child sent (ping, roots/list, sampling ...).
func (t *Stdio) serve(req mcptransport.JSONRPCRequest) {
	t.handlerMu.RLock()
	h := t.onRequest
	t.handlerMu.RUnlock()
	var resp *mcptransport.JSONRPCResponse
	if h == nil {
		resp = mcptransport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "method not found: "+req.Method, nil)
	} else if r, err := h(t.ctx, req); err != nil {
		resp = mcptransport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, err.Error(), nil)
	} else {
		resp = r
	}
	if resp == nil {
		return
	}
	if err := t.write(resp); err != nil {
		t.logger.Debug("answer upstream request", "method", req.Method, "err", err)
	}
}

func (t *Stdio) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	_, err = t.stdin.Write(b)
	return err
}

// SendRequest sends req and waits for its reply, ctx, or the child's end.
func (t *Stdio) SendRequest(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
	key := req.ID.String()
	ch := make(chan reply, 1)
	t.mu.Lock()
	if t.closedErr != nil {
		err := t.closedErr
		t.mu.Unlock()
		return nil, err
	}
	if _, dup := t.pending[key]; dup {
		t.mu.Unlock()
		return nil, fmt.Errorf("request id %s is already pending", key)
	}
	t.pending[key] = ch
	t.mu.Unlock()
	if err := t.write(req); err != nil {
		t.forget(key)
		return nil, fmt.Errorf("write request: %w", err)
	}
	select {
	case r := <-ch:
		return r.resp, r.err
	case <-ctx.Done():
		t.forget(key)
		return nil, ctx.Err()
	}
}

func (t *Stdio) forget(key string) {
	t.mu.Lock()
	delete(t.pending, key)
	t.mu.Unlock()
}

// SendNotification sends n to the child.
func (t *Stdio) SendNotification(_ context.Context, n mcp.JSONRPCNotification) error {
	t.mu.Lock()
	err := t.closedErr
	t.mu.Unlock()
	if err != nil {
		return err
	}
	return t.write(n)
}

// SetNotificationHandler sets who hears the child's notifications.
func (t *Stdio) SetNotificationHandler(h func(mcp.JSONRPCNotification)) {
	t.handlerMu.Lock()
	defer t.handlerMu.Unlock()
	t.onNotify = h
}

// SetRequestHandler sets who answers the child's requests.
func (t *Stdio) SetRequestHandler(h mcptransport.RequestHandler) {
	t.handlerMu.Lock()
	defer t.handlerMu.Unlock()
	t.onRequest = h
}

// Close closes the child's stdin, which asks it to exit; stopping it for
// good is the Process's ladder. Requests the child sent us are cancelled.
func (t *Stdio) Close() error {
	t.cancel()
	err := t.stdin.Close()
	t.wg.Wait()
	if errors.Is(err, os.ErrClosed) {
		return nil
	}
	return err
}

// GetSessionId is empty: stdio has no session id.
func (t *Stdio) GetSessionId() string { return "" }

func preview(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}
