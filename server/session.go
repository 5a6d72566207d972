package server

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// session is one downstream client as mcp-go's MCPServer sees it: it
// records what initialize negotiated and queues notifications for the
// client.
type session struct {
	id            string
	requester     requester // sends a request to the client; nil if it cannot
	initialized   atomic.Bool
	notifications chan mcp.JSONRPCNotification

	mu              sync.Mutex // guards the fields below
	clientInfo      mcp.Implementation
	capabilities    mcp.ClientCapabilities
	protocolVersion string
	logLevel        mcp.LoggingLevel
}

// requester sends a request to the client and waits for its answer.
type requester func(ctx context.Context, method string, params any) (json.RawMessage, error)

// notificationBuffer is how many notifications may wait for a slow client;
// mcp-go drops (and reports) what does not fit rather than block the hub.
const notificationBuffer = 256

func newSession(id string) *session {
	return &session{id: id, notifications: make(chan mcp.JSONRPCNotification, notificationBuffer), logLevel: mcp.LoggingLevelInfo}
}

func (s *session) SessionID() string                                   { return s.id }
func (s *session) Initialize()                                         { s.initialized.Store(true) }
func (s *session) Initialized() bool                                   { return s.initialized.Load() }
func (s *session) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notifications }

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
