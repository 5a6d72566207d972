package server

import (
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/clients"
	"github.com/dynamic-mcp/dynamic-mcp/server/listen"
)

// session is one downstream client: what initialize negotiated
// (clients.Protocol) and how to reach it, for as long as it lasts: what a
// request of it reads (clientState) and what only a session that outlives
// its requests keeps (whether it was initialized, its listens, its end).
// Its state is small and plain, so that one day it can be shared.
type session struct {
	clientState
	initialized atomic.Bool   // initialize answered, the session resumed, or see clients.Protocol
	lists       *listen.State // what it was told of its lists, its listens
	gone        chan struct{} // closed when the session ends (see end)
	endOnce     sync.Once
}

func newSession(id, transport string) *session {
	return &session{
		clientState: clientState{id: id, transport: transport, logLevel: mcp.LoggingLevelInfo},
		gone:        make(chan struct{}),
		lists:       listen.NewState(),
	}
}

// Initialize marks the session initialized: it may set its log level,
// and over HTTP it is no request's alone (see session.sessionless).
func (s *session) Initialize() { s.initialized.Store(true) }

// Initialized reports whether the session has been initialized.
func (s *session) Initialized() bool { return s.initialized.Load() }

// Modern reports whether the client has sent a request of 2026-07-28 or
// later (see listen.State.Modern).
func (s *session) Modern() bool { return s.lists.Modern() }

// Updated tells the session's open listens that uri changed.
func (s *session) Updated(uri string, params json.RawMessage) { s.lists.Updated(uri, params) }

// End marks the session ended, which stops what the hub does for it (a
// pending list_changed).
func (s *session) End() { s.endOnce.Do(func() { close(s.gone) }) }

// Lists and Gone (and ID and Notify) are the session as its listens see
// it (listen.Session).
func (s *session) Lists() *listen.State  { return s.lists }
func (s *session) Gone() <-chan struct{} { return s.gone }

// sessionless reports whether s is the session of one request over HTTP
// that came without Mcp-Session-Id (a listen's, which the face opens for
// it alone): it ends with that request.
func (s *session) sessionless() bool {
	return s.transport == "streamable-http" && !s.Initialized()
}

// saw and setModern keep what a request of the session's told it of its
// lists and its era (listen.State's Saw and SetModern).
func (s *session) saw(k listen.Kind, hash uint64) { s.lists.Saw(k, hash) }
func (s *session) setModern()                     { s.lists.SetModern() }

// resume sets the state of a session initialized elsewhere (see
// SessionOptions.State), as initialize would have left it: its client is
// not asked again. What state holds is bounded here as initialize bounds
// it (the identity was bounded where it was made).
func (s *session) resume(state SessionState) {
	s.mu.Lock()
	s.protocolVersion = clients.ClipText(state.ProtocolVersion)
	s.clientInfo = clients.BoundImplementation(state.ClientInfo)
	s.capabilities = clients.BoundCapabilities(state.Capabilities)
	s.capsKnown = state.CapsKnown
	if state.LogLevel != "" {
		s.logLevel = state.LogLevel
	}
	s.mu.Unlock()
	s.Initialize()
}
