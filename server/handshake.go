package server

import (
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/apps"
	"github.com/dynamic-mcp/dynamic-mcp/server/skills"
)

// What is left of the protocol once the hub's own methods are dispatched
// (the handshake, ping, logging/setLevel, and methods that do not exist)
// is answered by clients.Protocol (handshake_test.go holds its answers
// against mcp-go's MCPServer); this file is what the hub declares in the
// handshake's answer.

// hubName is the name the hub gives clients in serverInfo.
const hubName = "dynamic-mcp"

// hubCapabilities are what the hub declares to every client. Tasks are
// passed through to the upstreams that run them; a client only asks for
// one where a tool's definition says so.
var hubCapabilities = mcp.ServerCapabilities{
	Tools: &struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}{ListChanged: true},
	Prompts: &struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}{ListChanged: true},
	Resources: &struct {
		Subscribe   bool `json:"subscribe,omitempty"`
		ListChanged bool `json:"listChanged,omitempty"`
	}{Subscribe: true, ListChanged: true},
	Completions: &struct{}{},
	Logging:     &struct{}{},
	Tasks: &mcp.TasksCapability{
		List:   &struct{}{},
		Cancel: &struct{}{},
		Requests: &mcp.TaskRequestsCapability{Tools: &struct {
			Call *struct{} `json:"call,omitempty"`
		}{Call: &struct{}{}}},
	},
}

// capabilities are what the hub declares to req's client: hubCapabilities,
// and the extensions the upstreams of its view serve (skills, apps).
func (req *request) capabilities() mcp.ServerCapabilities {
	caps := hubCapabilities
	caps.Extensions = req.snap.viewOf(req.sess.profileIn(req.snap.cfg)).extensions()
	return caps
}

// instructions is the text of the handshake's answer to req: the
// instructions of the upstreams of the client's view.
func (req *request) instructions() string {
	return req.snap.viewOf(req.sess.profileIn(req.snap.cfg)).Instructions("")
}

// extensions are the view's capabilities.extensions: the Skills
// extension's when a server of the view serves it, or may: one is still
// starting, its capabilities not known yet, and a client that connects
// with the hub (a desktop client starts it) is to see the skills it
// brings, skills/list waiting for it as the first page of every list
// does. What such a server turns out not to serve is answered as for a
// skill or directory that does not exist. nil when no server serves it.
func (v *view) extensions() map[string]any {
	ext := map[string]any{}
	switch {
	case v.Starting:
		ext[skills.ExtensionID] = map[string]any{"directoryRead": true}
	case v.skills.Offered():
		ext[skills.ExtensionID] = v.skills.Capability()
	}
	if settings := v.apps.Settings(); settings != nil {
		ext[apps.Extension] = settings // server/apps
	}
	if len(ext) == 0 {
		return nil
	}
	return ext
}
