package transport

import (
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

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// errStreamClosed is what Read returns once Close was called.
var errStreamClosed = errors.New("stream closed")

// inbound is one thing for Read to return: a message, or an error about
// one call (*jsonrpc.CallError, *jsonrpc.TooLargeError).
type inbound struct {
	msg []byte
	err error
}

// httpStream is what both HTTP streams share: the client and what every
// request carries, the queue Read takes from, and the goroutines that
// fill it, owned by the stream and waited for by Close.
type httpStream struct {
	url           string
	client        *http.Client
	headers       map[string]string                     // from the config
	authorization func(context.Context) (string, error) // an OAuth sign-in; may be nil
	limit         int                                   // settings.max_message_size
	logger        *slog.Logger

	in chan inbound // to Read, from the goroutines reading answers and streams

	ctx    context.Context // ends with Close or the stream's failure
	cancel context.CancelFunc
	wg     sync.WaitGroup // the goroutines reading answers and streams

	failOnce sync.Once
	failed   chan struct{} // closed when the stream is over, failErr set
	failErr  error

	mu      sync.Mutex // guards version, posts, related, and starting goroutines (goOwned)
	version string     // the negotiated protocol version; "" before the handshake
	// paramHeaders names a tools/call's Mcp-Param-* headers (see
	// SetParamHeaders); nil for none.
	paramHeaders func(params json.RawMessage) map[string]string
	// posts cancels the POST of each request in flight, by id, so that a
	// call the Conn gave up on (notifications/cancelled) stops reading.
	posts map[string]context.CancelFunc
	// related is, for each request of the server's that came in the answer
	// to one of ours and is not answered yet, the id of ours (see Related).
	related map[string]json.RawMessage
}

// maxRelated bounds related: a server that sends requests the Conn
// refuses without an answer must not grow it.
const maxRelated = 1024

func newHTTPStream(url string, headers map[string]string, authorization func(context.Context) (string, error), limit int, logger *slog.Logger) httpStream {
	ctx, cancel := context.WithCancel(context.Background())
	return httpStream{
		url: url, client: newHTTPClient(), headers: headers, authorization: authorization, limit: limit, logger: logger,
		in:      make(chan inbound),
		ctx:     ctx,
		cancel:  cancel,
		failed:  make(chan struct{}),
		posts:   map[string]context.CancelFunc{},
		related: map[string]json.RawMessage{},
	}
}

// Read returns the next message of the server, or an error about one
// call; once the stream is over, why (after what came before it).
func (s *httpStream) Read() ([]byte, error) {
	select {
	case m := <-s.in:
		return m.msg, m.err
	case <-s.failed:
		select {
		case m := <-s.in:
			return m.msg, m.err
		default:
		}
		return nil, s.failErr
	}
}

// fail ends the stream with err: Read returns it, the goroutines stop,
// and no more start.
func (s *httpStream) fail(err error) {
	s.failOnce.Do(func() {
		s.mu.Lock()
		s.failErr = err
		close(s.failed)
		s.mu.Unlock()
		s.cancel()
	})
}

// goOwned runs f on a goroutine the stream owns (Close waits for it),
// unless the stream is over; a panic in f is logged and ends only f.
func (s *httpStream) goOwned(what string, f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.failed:
		return false
	default:
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			if r := recover(); r != nil {
				s.logger.Error("panic in an HTTP stream", "in", what, "panic", r)
			}
		}()
		f()
	}()
	return true
}

// Fail ends the stream with err at once, as if it had failed: Read
// returns err. Close still ends the session and waits for the goroutines.
func (s *httpStream) Fail(err error) { s.fail(err) }

// deliver hands m to Read; false when the stream is over first.
func (s *httpStream) deliver(m inbound) bool {
	select {
	case s.in <- m:
		return true
	case <-s.failed:
		return false
	}
}

// callFailed fails the call with id with err, unless the stream is over
// or the call was given up (ctx ended).
func (s *httpStream) callFailed(ctx context.Context, id json.RawMessage, err error) {
	if ctx.Err() != nil {
		return
	}
	s.deliver(inbound{err: &jsonrpc.CallError{ID: id, Err: err}})
}

// SetProtocolVersion records the negotiated version, which every request
// after the handshake carries in the MCP-Protocol-Version header
// (2025-11-25, basic/transports, "Protocol Version Header").
func (s *httpStream) SetProtocolVersion(version string) {
	s.mu.Lock()
	s.version = version
	s.mu.Unlock()
}

// newRequest is an HTTP request to url with what every request carries:
// the protocol version, the configured headers, the OAuth token.
func (s *httpStream) newRequest(ctx context.Context, method, url string, body []byte) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	s.mu.Lock()
	version, paramHeaders := s.version, s.paramHeaders
	s.mu.Unlock()
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	if body != nil {
		standardHeaders(req.Header, version, body, paramHeaders)
	}
	for k, v := range s.headers {
		req.Header.Set(k, v)
	}
	if s.authorization != nil {
		h, err := s.authorization(ctx)
		if err != nil {
			s.logger.Warn("no OAuth token for the request", "err", err)
		} else {
			req.Header.Set("Authorization", h)
		}
	}
	return req, nil
}

// write is both streams' Write: a request is POSTed by call on a
// goroutine of the stream's (Write never waits for a call's answer);
// anything else by send within ctx, on the caller's goroutine, in order.
func (s *httpStream) write(ctx context.Context, msg []byte,
	call func(ctx context.Context, id json.RawMessage, method string),
	send func(ctx context.Context, method string) error) error {
	select {
	case <-s.failed:
		return s.failErr
	default:
	}
	id, method := peek(msg)
	if id != nil && method != "" {
		return s.startCall(id, method, func(ctx context.Context) { call(ctx, id, method) })
	}
	switch {
	case method == "notifications/cancelled":
		defer s.cancelled(msg)
	case id != nil:
		s.answered(id)
	}
	ctx, release := s.within(ctx)
	defer release()
	return send(ctx, method)
}

// startCall runs post, which POSTs the request with id and hands on what
// comes of it, on a goroutine of the stream's. The POST is tracked before
// it starts, so that a cancellation written right after it finds it; its
// ctx ends with the stream or the cancellation.
func (s *httpStream) startCall(id json.RawMessage, method string, post func(ctx context.Context)) error {
	ctx, cancel := context.WithCancel(s.ctx)
	untrack := s.track(id, cancel)
	if !s.goOwned("POST "+method, func() {
		defer untrack()
		post(ctx)
	}) {
		untrack()
		return s.failErr
	}
	return nil
}

// within is ctx, ended also when the stream ends; release frees it.
func (s *httpStream) within(ctx context.Context) (_ context.Context, release func()) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// writeFailed is the error of a POST of a notification or answer that
// failed: the stream's end, a write timeout (ctx), or nil for a server
// that did not take it (logged: the conversation goes on).
func (s *httpStream) writeFailed(ctx context.Context, method string, err error) error {
	switch {
	case s.ctx.Err() != nil:
		return s.failErr
	case ctx.Err() != nil:
		return fmt.Errorf("%w: POST %s: %w", jsonrpc.ErrWriteTimeout, method, err)
	}
	s.logger.Warn("upstream did not take a message", "method", method, "err", err)
	return nil
}

// track registers the POST of the request with id; the func it returns
// forgets it.
func (s *httpStream) track(id json.RawMessage, cancel context.CancelFunc) func() {
	s.mu.Lock()
	s.posts[string(id)] = cancel
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.posts, string(id))
		s.mu.Unlock()
		cancel()
	}
}

// cancelled stops reading the answer to the request a
// notifications/cancelled names: the Conn has given up on it.
func (s *httpStream) cancelled(msg []byte) {
	id := jsonrpc.Field(jsonrpc.Field(msg, "params"), "requestId")
	if id == nil {
		return
	}
	s.mu.Lock()
	cancel := s.posts[string(id)]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Related is the id of the request of ours in whose answer the server
// sent its request with id (2025-11-25, basic/transports: a server may
// send requests "related to the originating client request" on its answer
// stream); nil when it came on its own.
func (s *httpStream) Related(id json.RawMessage) json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.related[string(id)]
}

// relate records that the server's message msg, if a request, came in the
// answer to our request with id, and returns the request's id (nil for
// anything else, or when none more can be recorded). The caller forgets it
// when that call ends, answered or not (a request the Conn refused
// quietly, or the server cancelled, is never answered).
func (s *httpStream) relate(msg []byte, id json.RawMessage) json.RawMessage {
	theirs, method := peek(msg)
	if theirs == nil || method == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.related) >= maxRelated {
		return nil
	}
	s.related[string(theirs)] = id
	return theirs
}

// answered forgets the relation of the server's request with id, which
// is being answered.
func (s *httpStream) answered(id json.RawMessage) {
	s.mu.Lock()
	delete(s.related, string(id))
	s.mu.Unlock()
}

// peek returns a message's id and method without decoding the rest: it is
// ours (the Conn encoded it), so it is valid.
func peek(msg []byte) (id json.RawMessage, method string) {
	o, _ := jsonrpc.ScanObject(msg) // one scan, no validation again
	id = o.Field("id")
	if m := o.Field("method"); m != nil {
		_ = json.Unmarshal(m, &method)
	}
	return id, method
}

// answers reports whether msg, an event of an answer stream, is the
// answer to the request with id.
func answers(msg []byte, id json.RawMessage) bool {
	return jsonrpc.Field(msg, "method") == nil && bytes.Equal(jsonrpc.Field(msg, "id"), id)
}

// mediaType is resp's content type without its parameters.
func mediaType(resp *http.Response) string {
	t, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return t
}

// readEvents hands each event of an SSE body to Read until the body ends
// (nil), the stream is over, or an event is over the limit (its
// *jsonrpc.TooLargeError). fn, when not nil, sees each message first; the
// body is not read further once fn said that message is the last (nil).
func (s *httpStream) readEvents(body io.Reader, fn func(data []byte) (last bool)) error {
	return s.readEventsFrom(newEventReader(body, s.limit), fn)
}

// readEventsFrom is readEvents of the events r reads, which keeps the
// stream's last event id and retry time for a resume.
func (s *httpStream) readEventsFrom(r *eventReader, fn func(data []byte) (last bool)) error {
	for {
		ev, err := r.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if ev.typ != "message" || len(bytes.TrimSpace(ev.data)) == 0 {
			continue // a priming event (an id and empty data) carries no message
		}
		last := fn != nil && fn(ev.data)
		if !s.deliver(inbound{msg: ev.data}) {
			return s.failErr
		}
		if last {
			return nil
		}
	}
}

// closeBody closes resp's body, reading what is left of a short one first
// so that its connection can be used again; an event stream, which may
// stay open, is closed as it is.
func closeBody(resp *http.Response) {
	if mediaType(resp) != "text/event-stream" && resp.ContentLength >= 0 && resp.ContentLength <= 64<<10 {
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	_ = resp.Body.Close()
}
