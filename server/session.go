package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// sink delivers messages the hub sends a client on its own initiative
// (notifications, and requests such as elicitation). ctx is the request
// the message belongs to, if any: over HTTP it picks the stream.
type sink interface {
	deliver(ctx context.Context, msg []byte)
}

// session is one downstream client: what initialize negotiated (kept by
// mcp-go's MCPServer through the interfaces below), its requests in flight,
// and the requests the hub sent it.
type session struct {
	id            string
	sink          sink
	initialized   atomic.Bool
	notifications chan mcp.JSONRPCNotification // for mcp-go's own notifications

	mu              sync.Mutex // guards the fields below
	clientInfo      mcp.Implementation
	capabilities    mcp.ClientCapabilities
	protocolVersion string
	logLevel        mcp.LoggingLevel
	inflight        map[string]context.CancelFunc // the client's requests, by id
	outgoing        map[string]chan *envelope     // the hub's requests, by id
	closed          bool

	nextID atomic.Int64
}

// notificationBuffer is how many of mcp-go's notifications may wait for a
// slow client; mcp-go drops (and reports) what does not fit rather than
// block the hub.
const notificationBuffer = 256

func newSession(id string, out sink) *session {
	return &session{
		id: id, sink: out,
		notifications: make(chan mcp.JSONRPCNotification, notificationBuffer),
		logLevel:      mcp.LoggingLevelInfo,
		inflight:      map[string]context.CancelFunc{},
		outgoing:      map[string]chan *envelope{},
	}
}

func (s *session) SessionID() string                                   { return s.id }
func (s *session) Initialize()                                         { s.initialized.Store(true) }
func (s *session) Initialized() bool                                   { return s.initialized.Load() }
func (s *session) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notifications }

// drain passes mcp-go's notifications to the client until ctx ends.
func (s *session) drain(ctx context.Context) {
	for {
		select {
		case n := <-s.notifications:
			if b, err := json.Marshal(n); err == nil {
				s.sink.deliver(ctx, b)
			}
		case <-ctx.Done():
			return
		}
	}
}

// notify sends the client a notification; ctx is the request it belongs to.
func (s *session) notify(ctx context.Context, method string, params any) {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	if err == nil {
		s.sink.deliver(ctx, b)
	}
}

// request sends the client a request and waits for its answer.
func (s *session) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := json.RawMessage(fmt.Sprintf(`"dynamic-mcp-%d"`, s.nextID.Add(1)))
	ch := make(chan *envelope, 1)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("the client has gone")
	}
	s.outgoing[string(id)] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.outgoing, string(id))
		s.mu.Unlock()
	}()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	s.sink.deliver(ctx, b)
	select {
	case m := <-ch:
		if m == nil {
			return nil, fmt.Errorf("the client has gone")
		}
		if len(m.Error) > 0 {
			var e rpcError
			_ = json.Unmarshal(m.Error, &e)
			return nil, &e
		}
		return m.Result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// resolve hands the client's answer to the hub request waiting for it,
// and reports whether one was.
func (s *session) resolve(msg *envelope) bool {
	s.mu.Lock()
	ch := s.outgoing[string(msg.ID)]
	delete(s.outgoing, string(msg.ID))
	s.mu.Unlock()
	if ch == nil {
		return false
	}
	ch <- msg
	return true
}

// track records a client request in flight, so notifications/cancelled can
// cancel it; the returned func forgets it.
func (s *session) track(id json.RawMessage, cancel context.CancelFunc) func() {
	key := string(id)
	s.mu.Lock()
	s.inflight[key] = cancel
	s.mu.Unlock()
	return func() {
		cancel()
		s.mu.Lock()
		delete(s.inflight, key)
		s.mu.Unlock()
	}
}

// cancel cancels the request a notifications/cancelled names.
func (s *session) cancel(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	s.mu.Lock()
	cancel := s.inflight[string(p.RequestID)]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// close fails the hub's requests still waiting on the client and cancels
// the client's requests in flight.
func (s *session) close() {
	s.mu.Lock()
	s.closed = true
	for id, ch := range s.outgoing {
		close(ch)
		delete(s.outgoing, id)
	}
	for _, cancel := range s.inflight {
		cancel()
	}
	s.mu.Unlock()
}

func (s *session) SetClientInfo(info mcp.Implementation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clientInfo = info
}

func (s *session) GetClientInfo() mcp.Implementation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clientInfo
}

func (s *session) SetClientCapabilities(c mcp.ClientCapabilities) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.capabilities = c
}

func (s *session) GetClientCapabilities() mcp.ClientCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.capabilities
}

// SetProtocolVersion records the version initialize negotiated.
func (s *session) SetProtocolVersion(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.protocolVersion = v
}

// ProtocolVersion is the version initialize negotiated, "" before it.
func (s *session) ProtocolVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.protocolVersion
}

func (s *session) SetLogLevel(l mcp.LoggingLevel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logLevel = l
}

func (s *session) GetLogLevel() mcp.LoggingLevel {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logLevel
}
