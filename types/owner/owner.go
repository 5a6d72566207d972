// Package owner is whose requests to an upstream server are (Owner) and
// the connection one goes on (ConnID): the types upstream and the call
// contract (server/call) share, below both, so that the contract names the
// request upstream (upstream.Server's RequestOn) without importing it.
package owner

import "github.com/mark3labs/mcp-go/mcp"

// ConnID names one connection to a server: the shared one, a reconnection
// after it ended, or one client session's own (isolation: per-session).
// No two connections the process makes share one, so what a server
// numbers per connection (its task ids) is told apart by (ConnID, id)
// across servers, sessions and restarts. Zero names none.
type ConnID uint64

// Owner is whose request a request to a server is (see upstream.Server.Request):
// a client session, or another holder of connections of its own (a call
// the hub holds for a request without a session); nil is no one's, the
// server's shared connection. The requests of one owner share its
// connections of its own, keyed by it (so an Owner is comparable), and
// what the server sends during them comes back with it (upstream.Event.Owner).
// What an owner may not know it answers as "none", never by leaving a
// method out: no request asserts an owner to a type.
type Owner interface {
	// UserKey is the owner's caller's key among all callers, "" for none:
	// auth: per-user gives each key a connection of its own.
	UserKey() string
	// Client names the client the owner belongs to: the credential its
	// requests came with. The owners of one client share the client's part
	// of each cap on per-session connections (http.client_share); "" is no
	// one's client, bounded by the caps alone.
	Client() string
	// ClientCapabilities are what the owner's client can answer: known is
	// false until the client has said so (in initialize, or in the _meta
	// of a 2026-07-28 request), and for an owner that cannot tell; a
	// connection of its own then declares the manager's.
	ClientCapabilities() (caps mcp.ClientCapabilities, known bool)
	// SessionID is the id of the client session the owner is, "" for an
	// owner that is none (a held call, a user's own connection): whoever
	// routes what comes back with it (upstream.Event.Owner) finds the session by
	// it, never by asserting the owner to a type.
	SessionID() string
}
