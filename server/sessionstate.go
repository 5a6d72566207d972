package server

import (
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/clients"
	"github.com/dynamic-mcp/dynamic-mcp/server/identity"
)

// SessionState is a session's small state, what initialize negotiated and
// what the hub needs to go on serving it: serialisable, so that a face
// can seal it into the session id and another process resume the session
// from it (see Hub.Resume). What changes later (the log level by
// logging/setLevel, subscriptions) is the state of the process that saw
// the change: a resumed session starts from what was sealed.
type SessionState struct {
	ProtocolVersion string                 `json:"v,omitempty"`
	ClientInfo      mcp.Implementation     `json:"ci"`
	Capabilities    mcp.ClientCapabilities `json:"cc"`
	CapsKnown       bool                   `json:"ck,omitempty"`
	LogLevel        mcp.LoggingLevel       `json:"ll,omitempty"`
	Profile         string                 `json:"p,omitempty"` // the profile the session sees
	Identity        *identity.Identity     `json:"id,omitempty"`
}

// State is the session's state now (see SessionState).
func (s *Session) State() SessionState {
	ss := s.sess
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return SessionState{ProtocolVersion: ss.protocolVersion, ClientInfo: ss.clientInfo, Capabilities: ss.capabilities,
		CapsKnown: ss.capsKnown, LogLevel: ss.logLevel, Profile: ss.profile, Identity: ss.who}
}

// Resume opens a session with id that has been initialized elsewhere,
// with state, as OpenSession would and as initialize would have left it: its
// client is not asked again. What state holds is bounded here as
// initialize bounds it (the identity was bounded where it was made).
func (h *Hub) Resume(id, transport string, state SessionState, peer Peer) (*Session, error) {
	s, err := h.open(id, transport, state.Profile, state.Identity, peer)
	if err != nil {
		return nil, err
	}
	ss := s.sess
	ss.mu.Lock()
	ss.protocolVersion = clients.ClipText(state.ProtocolVersion)
	ss.clientInfo = clients.BoundImplementation(state.ClientInfo)
	ss.capabilities = clients.BoundCapabilities(state.Capabilities)
	ss.capsKnown = state.CapsKnown
	if state.LogLevel != "" {
		ss.logLevel = state.LogLevel
	}
	ss.mu.Unlock()
	ss.Initialize()
	return s, nil
}
