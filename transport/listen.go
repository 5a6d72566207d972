package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// streamable is mcp-go's Streamable HTTP transport plus the GET stream of
// the protocol versions before 2026-07-28, on which a server sends what
// belongs to no request of the client: list_changed, resources/updated, a
// roots/list after the roots changed (2025-11-25, basic/transports,
// "Listening for Messages from the Server").
//
// mcp-go opens that stream only with WithContinuousListening, deprecated
// because 2026-07-28 has no such stream (SEP-2575), and which keeps every
// connection on an older version. Here the stream is opened for a session
// of an older version only, once the client has sent
// notifications/initialized, which 2026-07-28 has no more. On 2026-07-28
// notifications come on a subscriptions/listen request (mcp-go's
// Client.Listen) and the server's questions as input_required results
// (SEP-2322): both ride ordinary requests and need nothing of the
// transport. Whether a connection may take 2026-07-28 at all is legacyOnly.
type streamable struct {
	*mcptransport.StreamableHTTP
	url        string
	client     *http.Client
	headers    map[string]string
	headerFunc mcptransport.HTTPHeaderFunc
	legacyOnly bool
	logger     *slog.Logger

	version atomic.Value // string: the negotiated protocol version

	handlerMu sync.RWMutex // guards the handlers
	onNotify  func(mcp.JSONRPCNotification)
	onRequest mcptransport.RequestHandler

	mu        sync.Mutex // guards listening and closed
	listening bool
	closed    bool

	ctx       context.Context // ends with Close
	cancel    context.CancelFunc
	wg        sync.WaitGroup // the GET stream and the requests it brought
	closeOnce sync.Once
	closeErr  error
}

var (
	_ mcptransport.BidirectionalInterface = (*streamable)(nil)
	_ mcptransport.HTTPConnection         = (*streamable)(nil)
)

// How long the GET stream waits before it is opened again after it ended:
// from listenRetryMin, doubling while it fails, up to listenRetryMax.
const (
	listenRetryMin = time.Second
	listenRetryMax = 30 * time.Second
)

// respondTimeout bounds posting the answer to a request the server sent on
// the GET stream.
const respondTimeout = 30 * time.Second

var (
	// errNoStream: the server answered the GET with 405, as a server
	// without the stream does.
	errNoStream = errors.New("the server offers no GET stream (HTTP 405)")
	// errNoSession: the server answered the GET with 404: the session
	// is over, or the server has no stream.
	errNoSession = errors.New("the server knows no such session (HTTP 404)")
)

// newStreamable wraps tr, which reaches url with client and sends headers
// and those of headerFunc (nil for none) with every request; the GET
// stream does the same. legacyOnly keeps the connection on a version
// before 2026-07-28.
func newStreamable(tr *mcptransport.StreamableHTTP, url string, client *http.Client, headers map[string]string,
	headerFunc mcptransport.HTTPHeaderFunc, legacyOnly bool, logger *slog.Logger) *streamable {
	ctx, cancel := context.WithCancel(context.Background())
	return &streamable{
		StreamableHTTP: tr, url: url, client: client, headers: headers, headerFunc: headerFunc, legacyOnly: legacyOnly, logger: logger,
		ctx: ctx, cancel: cancel,
	}
}

// RequiresLegacyProtocol tells mcp-go's client, which asks its transport,
// whether the connection must skip 2026-07-28 and start with initialize.
func (t *streamable) RequiresLegacyProtocol() bool { return t.legacyOnly }

// SetNotificationHandler sets the handler of notifications from the
// server, on every stream.
func (t *streamable) SetNotificationHandler(handler func(mcp.JSONRPCNotification)) {
	t.handlerMu.Lock()
	t.onNotify = handler
	t.handlerMu.Unlock()
	t.StreamableHTTP.SetNotificationHandler(handler)
}

// SetRequestHandler sets the handler of requests from the server, on
// every stream.
func (t *streamable) SetRequestHandler(handler mcptransport.RequestHandler) {
	t.handlerMu.Lock()
	t.onRequest = handler
	t.handlerMu.Unlock()
	t.StreamableHTTP.SetRequestHandler(handler)
}

// SetProtocolVersion records the negotiated protocol version, which every
// request carries in the Mcp-Protocol-Version header.
func (t *streamable) SetProtocolVersion(version string) {
	t.version.Store(version)
	t.StreamableHTTP.SetProtocolVersion(version)
}

// SendRequest sends a request and waits for its response. When the
// response broke off over the size limit, the error says so.
func (t *streamable) SendRequest(ctx context.Context, request mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
	ctx, over := withOverLimit(ctx)
	resp, err := t.StreamableHTTP.SendRequest(ctx, request)
	if e := over.Load(); err != nil && e != nil && !errors.Is(err, ErrTooLarge) {
		err = fmt.Errorf("%s: %w", request.Method, e)
	}
	return resp, err
}

// SendNotification sends a notification to the server. Once
// notifications/initialized has gone out, a session of a version before
// 2026-07-28 is established, and the GET stream opens.
func (t *streamable) SendNotification(ctx context.Context, notification mcp.JSONRPCNotification) error {
	err := t.StreamableHTTP.SendNotification(ctx, notification)
	if err == nil && notification.Method == string(mcp.MethodNotificationInitialized) {
		t.listen()
	}
	return err
}

// Close stops the GET stream, waits for the requests it brought to be
// answered or abandoned, and closes mcp-go's transport, which ends the
// session.
func (t *streamable) Close() error {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		t.closed = true
		t.mu.Unlock()
		t.cancel()
		t.wg.Wait()
		t.closeErr = t.StreamableHTTP.Close()
	})
	return t.closeErr
}

// listen starts the GET stream unless it runs already or the transport is
// closed.
func (t *streamable) listen() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.listening || t.closed {
		return
	}
	t.listening = true
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		defer func() {
			t.mu.Lock()
			t.listening = false
			t.mu.Unlock()
		}()
		defer func() {
			if r := recover(); r != nil {
				t.logger.Error("panic on the GET stream", "panic", r)
			}
		}()
		t.listenLoop(t.ctx)
	}()
}

// listenLoop keeps the GET stream open until ctx ends or the server says
// it has none for this session.
func (t *streamable) listenLoop(ctx context.Context) {
	delay := listenRetryMin
	for {
		delivered, err := t.stream(ctx)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errNoStream) || errors.Is(err, errNoSession) {
			// Notifications come with the responses to requests only. A
			// session that is over is found by the next request, which
			// starts a new one.
			t.logger.Debug("no GET stream: notifications come only with responses", "reason", err)
			return
		}
		if delivered {
			delay = listenRetryMin
		}
		if err != nil {
			t.logger.Warn("the GET stream from the server failed; opening it again", "err", err, "in", delay)
		} else {
			t.logger.Debug("the server ended the GET stream; opening it again", "in", delay)
		}
		timer := time.NewTimer(delay)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return
		}
		delay = min(2*delay, listenRetryMax)
	}
}

// stream opens the GET stream and reads it to its end. delivered reports
// whether it brought at least one message.
func (t *streamable) stream(ctx context.Context) (delivered bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	t.setHeaders(ctx, req.Header)
	resp, err := t.client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusMethodNotAllowed:
		return false, errNoStream
	case http.StatusNotFound:
		return false, errNoSession
	default:
		return false, fmt.Errorf("GET stream: HTTP status %d", resp.StatusCode)
	}
	if mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mediaType != "text/event-stream" {
		return false, fmt.Errorf("GET stream: content type %q, not text/event-stream", resp.Header.Get("Content-Type"))
	}
	err = readEvents(resp.Body, func(data []byte) {
		delivered = true
		t.dispatch(ctx, data)
	})
	return delivered, err
}

// setHeaders puts on h what every request of the session carries: the
// session id, the protocol version, and the configured headers.
func (t *streamable) setHeaders(ctx context.Context, h http.Header) {
	if id := t.GetSessionId(); id != "" {
		h.Set(mcptransport.HeaderKeySessionID, id)
	}
	if v, _ := t.version.Load().(string); v != "" {
		h.Set(mcptransport.HeaderKeyProtocolVersion, v)
	}
	for k, v := range t.headers {
		h.Set(k, v)
	}
	if t.headerFunc != nil {
		for k, v := range t.headerFunc(ctx) {
			h.Set(k, v)
		}
	}
}

// readEvents calls fn with the data of each event of an SSE stream until
// the stream ends; an event the stream ends in the middle of is dropped.
// The event type and id are not needed: every event is one JSON-RPC
// message, and this stream is not resumed.
func readEvents(r io.Reader, fn func(data []byte)) error {
	br := bufio.NewReader(r)
	var data []byte
	hasData := false
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: gather it whole. Its length is bounded by
			// the limit on the body.
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if hasData {
				fn(data)
			}
			data, hasData = data[:0], false
		case bytes.HasPrefix(line, []byte("data:")):
			if hasData {
				data = append(data, '\n')
			}
			value := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
			data, hasData = append(data, value...), true
		}
	}
}

// dispatch hands one message of the GET stream to the handlers.
func (t *streamable) dispatch(ctx context.Context, data []byte) {
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		t.logger.Warn("the GET stream sent a message that is not JSON; skipped", "err", err, "bytes", len(data))
		return
	}
	switch {
	case head.Method == "":
		t.logger.Debug("the GET stream sent a response to no request; dropped")
	case len(head.ID) == 0 || string(head.ID) == "null":
		var n mcp.JSONRPCNotification
		if err := json.Unmarshal(data, &n); err != nil {
			t.logger.Warn("the GET stream sent a bad notification; skipped", "err", err)
			return
		}
		t.handlerMu.RLock()
		h := t.onNotify
		t.handlerMu.RUnlock()
		if h != nil {
			h(n)
		}
	default:
		var req mcptransport.JSONRPCRequest
		if err := json.Unmarshal(data, &req); err != nil {
			t.logger.Warn("the GET stream sent a bad request; skipped", "err", err)
			return
		}
		t.serve(ctx, req)
	}
}

// serve answers a request of the GET stream, on a goroutine of its own so
// that the stream goes on meanwhile. The handler bounds how many wait and
// for how long.
func (t *streamable) serve(ctx context.Context, req mcptransport.JSONRPCRequest) {
	t.handlerMu.RLock()
	h := t.onRequest
	t.handlerMu.RUnlock()
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		defer func() {
			if r := recover(); r != nil {
				t.logger.Error("panic answering a request of the GET stream", "method", req.Method, "panic", r)
			}
		}()
		var resp *mcptransport.JSONRPCResponse
		if h == nil {
			resp = mcptransport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "no handler for "+req.Method, nil)
		} else {
			var err error
			if resp, err = h(ctx, req); err != nil {
				resp = mcptransport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, err.Error(), nil)
			}
		}
		if resp == nil {
			return
		}
		if err := t.respond(ctx, resp); err != nil && ctx.Err() == nil {
			t.logger.Warn("answer to a request of the GET stream not delivered", "method", req.Method, "err", err)
		}
	}()
}

// respond posts the answer to a request of the GET stream, framed as the
// stdio side frames one: the result's bytes as they are.
func (t *streamable) respond(ctx context.Context, resp *mcptransport.JSONRPCResponse) error {
	id, err := json.Marshal(resp.ID)
	if err != nil {
		return err
	}
	var body []byte
	if resp.Error != nil {
		body = jsonrpc.EncodeError(id, &jsonrpc.Error{Code: resp.Error.Code, Message: resp.Error.Message, Data: resp.Error.Data})
	} else {
		body = jsonrpc.Answer(id, resp.Result, nil)
	}
	ctx, cancel := context.WithTimeout(ctx, respondTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	t.setHeaders(ctx, req.Header)
	res, err := t.client.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusAccepted {
		return fmt.Errorf("HTTP status %d", res.StatusCode)
	}
	return nil
}
