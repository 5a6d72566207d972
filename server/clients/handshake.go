package clients

import (
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// This file answers what is left of the protocol once the hub's own
// methods are dispatched: the handshake (initialize, and server/discover
// from 2026-07-28), ping, logging/setLevel, and methods that do not exist.
// mcp-go's MCPServer answered them until it was dropped; these answers
// are its, byte for byte (the hub's handshake_test.go holds them against
// it), and the session's state is the hub's own.

// Session is the session a request is answered in, as the handshake
// keeps what the client states on it and reads its log level's state.
type Session interface {
	// Initialize marks the session initialized; Initialized reports it.
	Initialize()
	Initialized() bool
	// SetClientInfo, SetClientCapabilities and SetProtocolVersion keep
	// what initialize states and agrees.
	SetClientInfo(mcp.Implementation)
	SetClientCapabilities(mcp.ClientCapabilities)
	SetProtocolVersion(string)
	// SetLogLevel keeps the level logging/setLevel asks for.
	SetLogLevel(mcp.LoggingLevel)
}

// Request is one request that no method of the hub's own answers.
type Request struct {
	Msg     *jsonrpc.Message
	Modern  bool // of 2026-07-28 or later (see era.StateOf)
	Session Session
	// Capabilities and Instructions are what the hub declares to the
	// client, asked for by the handshake's answer alone, once the client's
	// statement is the session's (its view may depend on its name).
	Capabilities func() mcp.ServerCapabilities
	Instructions func() string
}

// Protocol answers the requests of every client that no method of the
// hub's own answers.
type Protocol struct {
	// Info is the hub's serverInfo.
	Info mcp.Implementation
	// LevelSet is called after each logging/setLevel, answered or not:
	// the upstreams log at the most verbose level any client asked for,
	// whatever this one's answer.
	LevelSet func()
}

// Answer answers req. Its result is final: not fitted to max_result, and
// decorated for 2026-07-28 here (server/discover) rather than by the hub.
func (p *Protocol) Answer(req Request) (json.RawMessage, error) {
	method := req.Msg.Method
	if req.Modern {
		// The hub has refused the methods 2026-07-28 removed, and
		// server/discover is all that is left to answer.
		return p.answerModern(req)
	}
	switch method {
	case "initialize":
		var r mcp.InitializeRequest
		if err := unmarshalRequest(req.Msg, &r); err != nil {
			return nil, err
		}
		return p.initialize(req, r)
	case "ping":
		var r mcp.PingRequest
		if err := unmarshalRequest(req.Msg, &r); err != nil {
			return nil, err
		}
		return jsonrpc.Marshal(mcp.EmptyResult{})
	case "logging/setLevel":
		defer p.LevelSet()
		var r mcp.SetLevelRequest
		if err := unmarshalRequest(req.Msg, &r); err != nil {
			return nil, err
		}
		return setLevel(req.Session, r.Params.Level)
	case string(mcp.MethodServerDiscover), string(mcp.MethodSubscriptionsListen):
		return nil, RequiresModern(method)
	}
	return nil, methodNotFound(method)
}

// initialize answers the handshake of a client before 2026-07-28 (MCP
// basic/lifecycle) and keeps what it states as the session's: its
// identity, its capabilities and the version agreed. A client that asks
// for a version the hub does not serve, or for 2026-07-28 (which has no
// initialize), is offered the latest before it.
func (p *Protocol) initialize(req Request, r mcp.InitializeRequest) (json.RawMessage, error) {
	version := mcp.NegotiateLegacyVersion(r.Params.ProtocolVersion)
	sess := req.Session
	sess.Initialize()
	sess.SetClientInfo(r.Params.ClientInfo)
	sess.SetClientCapabilities(r.Params.Capabilities)
	sess.SetProtocolVersion(version)
	return jsonrpc.Marshal(mcp.InitializeResult{
		ProtocolVersion: version,
		ServerInfo:      p.Info,
		Capabilities:    req.Capabilities(),
		Instructions:    req.Instructions(),
	})
}

// InitializeClient is the client an initialize states, raw the value of
// its clientInfo, as initialize keeps it on the session (bounded): what
// the hub shows the client depends on it (mode: auto, clients: rules)
// before the session has it. Empty when raw does not decode.
func InitializeClient(raw []byte) mcp.Implementation {
	var info mcp.Implementation
	if json.Unmarshal(raw, &info) != nil {
		return mcp.Implementation{}
	}
	return BoundImplementation(info)
}

// setLevel is logging/setLevel of a session: the least severe level of
// log message it wants (MCP server/utilities/logging).
func setLevel(sess Session, level mcp.LoggingLevel) (json.RawMessage, error) {
	if !sess.Initialized() {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "session not properly initialized")
	}
	if !level.ShouldSendTo(level) { // mcp's own test: level is one of its eight
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid logging level '"+clip.Echo(string(level))+"'")
	}
	sess.SetLogLevel(level)
	return jsonrpc.Marshal(mcp.EmptyResult{})
}

// answerModern answers a 2026-07-28 request for server/discover, or for a
// method that does not exist. Either counts as the client's first word
// where it is one: the session is initialized by it (a request over HTTP
// without a session is then no longer taken for one, see the hub's
// sessionless).
func (p *Protocol) answerModern(req Request) (json.RawMessage, error) {
	var wrapper struct {
		Params struct {
			Meta *mcp.Meta `json:"_meta"`
		} `json:"params"`
	}
	// What the request states of its client is the session's already
	// (see Statement); capabilities that do not decode refuse the request.
	if json.Unmarshal(req.Msg.Raw, &wrapper) == nil && wrapper.Params.Meta.ClientCapabilities() == nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "missing or invalid _meta field "+mcp.MetaKeyClientCapabilities)
	}
	req.Session.Initialize()
	if req.Msg.Method != string(mcp.MethodServerDiscover) {
		return nil, methodNotFound(req.Msg.Method)
	}
	var r mcp.DiscoverRequest
	if err := unmarshalRequest(req.Msg, &r); err != nil {
		return nil, err
	}
	res := mcp.DiscoverResult{
		SupportedVersions: mcp.ValidProtocolVersions,
		Capabilities:      req.Capabilities(),
		Instructions:      req.Instructions(),
	}
	// What 2026-07-28 asks of every result, and of a cacheable one: the
	// hub's identity, and a zero TTL in a private scope (SEP-2549).
	res.SetResultType(mcp.ResultTypeComplete)
	res.EnsureResultMeta().SetServerInfo(p.Info)
	res.SetCacheHints(0, mcp.CacheScopePrivate)
	return jsonrpc.Marshal(res)
}

// unmarshalRequest decodes the whole request as mcp's type for it, which
// refuses params of the wrong shape (-32600).
func unmarshalRequest(msg *jsonrpc.Message, v any) error {
	if err := json.Unmarshal(msg.Raw, v); err != nil {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, fmt.Sprintf("unparsable %s request: %s", msg.Method, err))
	}
	return nil
}

// RequiresModern refuses method, one of 2026-07-28's own (server/discover,
// subscriptions/listen), asked in an older era: as a method that does
// not exist there, as mcp-go's server does.
func RequiresModern(method string) *jsonrpc.Error {
	return jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, fmt.Sprintf("%q requires protocol version %s or later", method, mcp.ProtocolVersion20260728))
}

// methodNotFound answers a method that does not exist (-32601).
func methodNotFound(method string) error {
	return jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method "+clip.Echo(method)+" not found")
}
