// Package calltest makes the calls that tests hand the chain's stages,
// as net/http/httptest makes requests: a tools/call by a session that
// has a name and nothing else.
package calltest

import (
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// Session is a client session as a stage sees it: its id is s1 and its
// caller "session s1"; its other methods are not there (they panic).
type Session struct{ call.Session }

// ID is s1.
func (Session) ID() string { return "s1" }

// Caller is "session s1".
func (Session) Caller() string { return "session s1" }

// UserKey and User are "": no signed-in caller.
func (Session) UserKey() string { return "" }
func (Session) User() string    { return "" }

// ToolCall is a tools/call by Session of tool on server s of group g.
func ToolCall(tool string) *call.Call {
	return &call.Call{Origin: call.Origin{Session: Session{}}, Asked: call.Asked{Method: policy.MethodToolsCall},
		Route: call.Route{Server: &config.Server{Group: "g", Name: "s"}, Name: tool}}
}

// Owner is an owner of calls upstream (call.Owner) that knows nothing: no
// caller, no client, no capabilities, and no face to send its caller to
// sign in. A test's owner embeds it for what the test does not set.
type Owner struct{ _ byte } // not zero-size: distinct owners are distinct pointers

// UserKey is "": no caller.
func (Owner) UserKey() string { return "" }

// Client is "": no client's.
func (Owner) Client() string { return "" }

// SessionID is "": no session.
func (Owner) SessionID() string { return "" }

// ClientCapabilities are unknown.
func (Owner) ClientCapabilities() (mcp.ClientCapabilities, bool) {
	return mcp.ClientCapabilities{}, false
}

// Linker is nil: no face sends its caller to sign in.
func (Owner) Linker() call.Linker { return nil }
