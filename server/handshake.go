package server

import (
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/apps"
	"github.com/dynamic-mcp/dynamic-mcp/server/routes"
	"github.com/dynamic-mcp/dynamic-mcp/server/skills"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// This file answers what is left of the protocol once the hub's own
// methods are dispatched: the handshake (initialize, and server/discover
// from 2026-07-28), ping, logging/setLevel, and methods that do not exist.
// mcp-go's MCPServer answered them until it was dropped; these answers
// are its, byte for byte (handshake_test.go holds them against it), and
// the session's state is the hub's own (session.go).

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

// answerProtocol answers a request that no method of the hub's own
// answers. Its result is final: not fitted to max_result, and decorated
// for 2026-07-28 here (server/discover) rather than by handle.
func (h *Hub) answerProtocol(req *request) (json.RawMessage, error) {
	method := req.msg.Method
	if req.modern {
		// rounds.CheckModern has refused the methods 2026-07-28 removed, and
		// server/discover is all that is left to answer.
		return h.answerModern(req)
	}
	switch method {
	case "initialize":
		var r mcp.InitializeRequest
		if err := unmarshalRequest(req, &r); err != nil {
			return nil, err
		}
		return h.initialize(req, r)
	case "ping":
		var r mcp.PingRequest
		if err := unmarshalRequest(req, &r); err != nil {
			return nil, err
		}
		return jsonrpc.Marshal(mcp.EmptyResult{})
	case "logging/setLevel":
		// The upstreams log at the most verbose level any client asked
		// for, whatever this one's answer.
		defer h.routes.SetLogLevel()
		var r mcp.SetLevelRequest
		if err := unmarshalRequest(req, &r); err != nil {
			return nil, err
		}
		return setLevel(req.sess, r.Params.Level)
	case string(mcp.MethodServerDiscover), string(mcp.MethodSubscriptionsListen):
		return nil, errorf(codeMethodNotFound, fmt.Sprintf("%q requires protocol version %s or later", method, mcp.ProtocolVersion20260728))
	}
	return nil, methodNotFound(method)
}

// initialize answers the handshake of a client before 2026-07-28 (MCP
// basic/lifecycle) and keeps what it states as the session's: its
// identity, its capabilities and the version agreed. A client that asks
// for a version the hub does not serve, or for 2026-07-28 (which has no
// initialize), is offered the latest before it.
func (h *Hub) initialize(req *request, r mcp.InitializeRequest) (json.RawMessage, error) {
	version := mcp.NegotiateLegacyVersion(r.Params.ProtocolVersion)
	sess := req.sess
	sess.Initialize()
	sess.SetClientInfo(r.Params.ClientInfo)
	sess.SetClientCapabilities(r.Params.Capabilities)
	sess.SetProtocolVersion(version)
	return jsonrpc.Marshal(mcp.InitializeResult{
		ProtocolVersion: version,
		ServerInfo:      h.info,
		Capabilities:    req.capabilities(),
		Instructions:    req.instructions(),
	})
}

// setLevel is logging/setLevel of a session: the least severe level of
// log message it wants (MCP server/utilities/logging).
func setLevel(sess *session, level mcp.LoggingLevel) (json.RawMessage, error) {
	if !sess.Initialized() {
		return nil, errorf(codeInternalError, "session not properly initialized")
	}
	if !routes.KnownLevel(level) {
		return nil, errorf(codeInvalidParams, fmt.Sprintf("invalid logging level '%s'", level))
	}
	sess.SetLogLevel(level)
	return jsonrpc.Marshal(mcp.EmptyResult{})
}

// answerModern answers a 2026-07-28 request for server/discover, or for a
// method that does not exist. Either counts as the client's first word
// where it is one: the session is initialized by it (a request over HTTP
// without a session is then no longer taken for one, see sessionless).
func (h *Hub) answerModern(req *request) (json.RawMessage, error) {
	var wrapper struct {
		Params struct {
			Meta *mcp.Meta `json:"_meta"`
		} `json:"params"`
	}
	// What the request states of its client is the session's already
	// (stated); capabilities that do not decode refuse the request.
	if json.Unmarshal(req.msg.Raw, &wrapper) == nil && wrapper.Params.Meta.ClientCapabilities() == nil {
		return nil, errorf(codeInvalidParams, "missing or invalid _meta field "+mcp.MetaKeyClientCapabilities)
	}
	req.sess.Initialize()
	if req.msg.Method != string(mcp.MethodServerDiscover) {
		return nil, methodNotFound(req.msg.Method)
	}
	var r mcp.DiscoverRequest
	if err := unmarshalRequest(req, &r); err != nil {
		return nil, err
	}
	res := mcp.DiscoverResult{
		SupportedVersions: mcp.ValidProtocolVersions,
		Capabilities:      req.capabilities(),
		Instructions:      req.instructions(),
	}
	// What 2026-07-28 asks of every result, and of a cacheable one: the
	// hub's identity, and a zero TTL in a private scope (SEP-2549).
	res.SetResultType(mcp.ResultTypeComplete)
	res.EnsureResultMeta().SetServerInfo(h.info)
	res.SetCacheHints(0, mcp.CacheScopePrivate)
	return jsonrpc.Marshal(res)
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

// unmarshalRequest decodes the whole request as mcp's type for it, which
// refuses params of the wrong shape (-32600).
func unmarshalRequest(req *request, v any) error {
	if err := json.Unmarshal(req.msg.Raw, v); err != nil {
		return errorf(codeInvalidRequest, fmt.Sprintf("unparsable %s request: %s", req.msg.Method, err))
	}
	return nil
}

// methodNotFound answers a method that does not exist (-32601).
func methodNotFound(method string) error {
	return errorf(codeMethodNotFound, fmt.Sprintf("Method %s not found", method))
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
