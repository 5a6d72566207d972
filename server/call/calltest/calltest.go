// Package calltest makes the calls that tests hand the chain's stages,
// as net/http/httptest makes requests: a tools/call by a session that
// has a name and nothing else.
package calltest

import (
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

// ToolCall is a tools/call by Session of tool on server s of group g.
func ToolCall(tool string) *call.Call {
	return &call.Call{Origin: call.Origin{Session: Session{}}, Asked: call.Asked{Method: policy.MethodToolsCall},
		Route: call.Route{Server: &config.Server{Group: "g", Name: "s"}, Name: tool}}
}
