package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// ErrSessionExpired is wrapped by the error that ends a Streamable HTTP
// stream whose server answered 404 for its session: the server forgot it
// (restarted, or expired it), and a new one starts with initialize
// (2025-11-25, basic/transports, "Session Management").
var ErrSessionExpired = errors.New("the server ended the session (HTTP 404)")

// How long the GET stream waits before it is opened again after it ended:
// from listenRetryMin, doubling while it fails, up to listenRetryMax.
const (
	listenRetryMin = time.Second
	listenRetryMax = 30 * time.Second
)

// deleteTimeout bounds the DELETE that ends a session on Close.
const deleteTimeout = 2 * time.Second

// Streamable is the stream of a Streamable HTTP upstream (2025-11-25,
// basic/transports): each message POSTed, the answer to a request read
// from the POST's answer, JSON or an SSE stream, by a goroutine of the
// stream's own (Write never waits for a call's answer); notifications and
// answers accepted with 202. The session id comes with the answer to
// initialize and goes with every request after it; once the client has
// sent notifications/initialized, the GET stream opens, on which the
// server sends what belongs to no request (list_changed, resources/updated,
// its own requests), and is opened again with backoff when it ends.
//
// What the server sends comes out of Read as it sent it, whichever
// stream it came on, so that the Conn over it applies one set of rules
// (Decode's, MaxInflight to the server's requests). A POST the server
// refuses fails its call with a *jsonrpc.CallError carrying an
// *HTTPError; a 404 on the session ends the stream with ErrSessionExpired.
type Streamable struct {
	httpStream

	retryMin, retryMax time.Duration // the GET stream's backoff
	resumeRules        resumeRules   // of an answer stream that ends early (resume.go)

	sessionID    string        // guarded by mu: from the answer to initialize
	sessionEnded bool          // guarded by mu: a 404 said so; no DELETE
	listening    bool          // guarded by mu: the GET stream was opened
	listenEnded  chan struct{} // guarded by mu: closed when the GET stream's goroutine ends
	closeOnce    sync.Once
}

// NewStreamable is the stream of the Streamable HTTP server at url.
// headers go with every request, and authorization's header (an OAuth
// sign-in) when it is not nil. limit bounds a JSON answer, and each event
// of an SSE stream.
func NewStreamable(url string, headers map[string]string, authorization func(context.Context) (string, error), limit int, logger *slog.Logger) *Streamable {
	return &Streamable{
		httpStream: newHTTPStream(url, headers, authorization, limit, logger),
		retryMin:   listenRetryMin, retryMax: listenRetryMax,
	}
}

// Write POSTs msg. A request's answer is read by a goroutine of the
// stream's; a notification or answer waits for the server's 202 within
// ctx. notifications/initialized, once accepted, opens the GET stream.
func (s *Streamable) Write(ctx context.Context, msg []byte) error {
	return s.write(ctx, msg, func(ctx context.Context, id json.RawMessage, method string) {
		s.call(ctx, id, method, msg)
	}, func(ctx context.Context, method string) error {
		resp, sent, err := s.post(ctx, msg)
		if err != nil {
			return s.writeFailed(ctx, method, err)
		}
		defer closeBody(resp)
		switch {
		case resp.StatusCode == http.StatusNotFound && sent != "":
			s.expire()
			return s.failErr
		case resp.StatusCode/100 != 2:
			s.logger.Warn("upstream refused a message", "method", method, "err", newHTTPError(resp))
		case method == "notifications/initialized":
			s.listen()
		}
		return nil
	})
}

// post POSTs msg to the server with the session's headers; sent is the
// session id it carried.
func (s *Streamable) post(ctx context.Context, msg []byte) (resp *http.Response, sent string, err error) {
	req, err := s.newRequest(ctx, http.MethodPost, s.url, msg)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	s.mu.Lock()
	sent = s.sessionID
	s.mu.Unlock()
	if sent != "" {
		req.Header.Set("Mcp-Session-Id", sent)
	}
	resp, err = s.client.Do(req)
	return resp, sent, err
}

// get GETs an event stream of the session: the one the server opens
// (lastID ""), or an answer stream resumed after the event lastID.
func (s *Streamable) get(ctx context.Context, lastID string) (*http.Response, error) {
	req, err := s.newRequest(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	s.mu.Lock()
	if s.sessionID != "" {
		req.Header.Set("Mcp-Session-Id", s.sessionID)
	}
	s.mu.Unlock()
	return s.client.Do(req)
}

// expire ends the stream: the server forgot the session.
func (s *Streamable) expire() {
	s.mu.Lock()
	s.sessionEnded = true
	s.mu.Unlock()
	s.fail(fmt.Errorf("streamable http: %w", ErrSessionExpired))
}

// call POSTs the request msg and hands its answer, and whatever the
// server sends with it, to Read. ctx ends when the Conn gives up on the
// call.
func (s *Streamable) call(ctx context.Context, id json.RawMessage, method string, msg []byte) {
	resp, sent, err := s.post(ctx, msg)
	if err != nil {
		s.callFailed(ctx, id, fmt.Errorf("POST %s: %w", method, err))
		return
	}
	defer closeBody(resp)
	if resp.StatusCode == http.StatusNotFound && sent != "" {
		s.expire()
		return
	}
	if resp.StatusCode/100 != 2 {
		s.refused(ctx, id, resp)
		return
	}
	if method == "initialize" {
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			s.mu.Lock()
			s.sessionID = sid
			s.mu.Unlock()
		}
	}
	switch mediaType(resp) {
	case "application/json":
		body, err := readBody(resp.Body, s.limit)
		var tl *jsonrpc.TooLargeError
		switch {
		case errors.As(err, &tl):
			tl.ID = id
			s.deliver(inbound{err: tl})
		case err != nil:
			s.callFailed(ctx, id, fmt.Errorf("read the answer to %s: %w", method, err))
		case len(body) == 0:
			s.callFailed(ctx, id, fmt.Errorf("the server answered %s with an empty body", method))
		default:
			if err := jsonAnswer(body, id); err != nil {
				s.callFailed(ctx, id, fmt.Errorf("answered %s with %w", method, err))
				return
			}
			s.deliver(inbound{msg: body})
		}
	case "text/event-stream":
		// The answer is the stream's last message: the server should end
		// the stream after it (2025-11-25, basic/transports), and one that
		// keeps it open must not keep a connection and a goroutine per call.
		answered := false
		var theirs []json.RawMessage // the server's requests related to this call
		defer func() {
			for _, r := range theirs {
				s.answered(r) // the call is over: a request the hub never answered is moot
			}
		}()
		events := newEventReader(resp.Body, s.limit)
		onEvent := func(data []byte) bool {
			if answers(data, id) {
				answered = true
				return true
			}
			if r := s.relate(data, id); r != nil {
				theirs = append(theirs, r)
			}
			return false
		}
		err := s.readEventsFrom(events, onEvent)
		if !answered {
			err = s.resume(ctx, method, events, err, onEvent) // a stream the server ended early (resume.go)
		}
		var tl *jsonrpc.TooLargeError
		switch {
		case errors.As(err, &tl):
			tl.ID = id
			s.logger.Warn("upstream answer stream broke off", "method", method, "err", &streamTooLarge{size: tl.Size, limit: tl.Limit})
			s.deliver(inbound{err: tl})
		case err != nil:
			s.callFailed(ctx, id, fmt.Errorf("read the answer stream of %s: %w", method, err))
		case !answered:
			s.callFailed(ctx, id, fmt.Errorf("the server ended the answer stream of %s without answering, and without an event id to resume it from", method))
		}
	default:
		s.callFailed(ctx, id, fmt.Errorf("the answer to %s: HTTP status %d with content type %q", method, resp.StatusCode, resp.Header.Get("Content-Type")))
	}
}

// refused answers the call a POST was refused for: with the JSON-RPC
// error the server sent, if it sent one, else with an *HTTPError.
func (s *Streamable) refused(ctx context.Context, id json.RawMessage, resp *http.Response) {
	if mediaType(resp) == "application/json" {
		if body, err := readBody(resp.Body, s.limit); err == nil && jsonrpc.Field(body, "error") != nil && answers(body, id) {
			s.deliver(inbound{msg: body})
			return
		}
	}
	s.callFailed(ctx, id, newHTTPError(resp))
}

// listen starts the GET stream unless it was started already.
func (s *Streamable) listen() {
	s.mu.Lock()
	if s.listening {
		s.mu.Unlock()
		return
	}
	s.listening = true
	ended := make(chan struct{})
	s.listenEnded = ended
	s.mu.Unlock()
	if !s.goOwned("GET stream", func() {
		defer close(ended)
		s.listenLoop()
	}) {
		close(ended)
	}
}

var (
	// errNoStream: the server answered the GET with 405, as a server
	// without the stream does.
	errNoStream = errors.New("the server offers no GET stream (HTTP 405)")
	// errNoSession: the server answered the GET with 404: the session
	// is over, or the server has no stream.
	errNoSession = errors.New("the server knows no such session (HTTP 404)")
)

// listenLoop keeps the GET stream open until the stream is over or the
// server says it has none for this session.
func (s *Streamable) listenLoop() {
	delay := s.retryMin
	for {
		delivered, err := s.stream()
		if s.ctx.Err() != nil {
			return
		}
		if errors.Is(err, errNoStream) || errors.Is(err, errNoSession) {
			// Notifications come with the answers to requests only. A
			// session that is over is found by the next request.
			s.logger.Debug("no GET stream: notifications come only with answers", "reason", err)
			return
		}
		if delivered {
			delay = s.retryMin
		}
		if err != nil {
			s.logger.Warn("the GET stream from the server failed; opening it again", "err", err, "in", delay)
		} else {
			s.logger.Debug("the server ended the GET stream; opening it again", "in", delay)
		}
		timer := time.NewTimer(delay)
		select {
		case <-timer.C:
		case <-s.ctx.Done():
			timer.Stop()
			return
		}
		delay = min(2*delay, s.retryMax)
	}
}

// stream opens the GET stream and reads it to its end. delivered reports
// whether it brought at least one message.
func (s *Streamable) stream() (delivered bool, err error) {
	resp, err := s.get(s.ctx, "")
	if err != nil {
		return false, err
	}
	defer closeBody(resp)
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusMethodNotAllowed:
		return false, errNoStream
	case http.StatusNotFound:
		return false, errNoSession
	default:
		return false, fmt.Errorf("GET stream: %w", newHTTPError(resp))
	}
	if mediaType(resp) != "text/event-stream" {
		return false, fmt.Errorf("GET stream: content type %q, not text/event-stream", resp.Header.Get("Content-Type"))
	}
	err = s.readEvents(resp.Body, func([]byte) bool {
		delivered = true
		return false
	})
	var tl *jsonrpc.TooLargeError
	if errors.As(err, &tl) {
		err = &streamTooLarge{size: tl.Size, limit: tl.Limit}
	}
	return delivered, err
}

// Close ends the stream: Read returns, the goroutines reading answers and
// the GET stream stop and are waited for, and the session is ended with a
// DELETE (within deleteTimeout) unless the server ended it.
func (s *Streamable) Close() error {
	s.closeOnce.Do(func() {
		s.fail(errStreamClosed)
		s.wg.Wait()
		defer s.client.CloseIdleConnections()
		s.mu.Lock()
		sid, ended := s.sessionID, s.sessionEnded
		s.mu.Unlock()
		if sid == "" || ended {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
		defer cancel()
		req, err := s.newRequest(ctx, http.MethodDelete, s.url, nil)
		if err != nil {
			return
		}
		req.Header.Set("Mcp-Session-Id", sid)
		if resp, err := s.client.Do(req); err == nil {
			closeBody(resp)
		}
	})
	return nil
}
