package server

import (
	"bytes"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// A client of 2026-07-28 or later sends no initialize: it states its
// protocol version, its capabilities and who it is in the _meta of every
// request (the specification's "Protocol Version, Capabilities and Client
// Information" under basic/lifecycle; mcp.MetaKeyClientCapabilities).
// The hub keeps what the latest request stated as the session's, as
// initialize sets it for an older client: the session's capabilities
// decide what of an upstream's sampling, elicitation and roots requests
// reach it, what a per-session upstream connection declares, and whether
// a prompt policy can ask it. A request that states no capabilities
// states none (a server must not infer them from earlier requests).

// maxKeptStatement bounds the encoded capabilities a session keeps to
// recognise the next request's as the same without decoding them again.
const maxKeptStatement = 4 << 10

// clientStatement is what a 2026-07-28 request's _meta says of its
// client, as raw JSON values; modern is false for a request of an older
// era (or one that states no such version).
type clientStatement struct {
	modern       bool
	version      string
	capabilities []byte
	clientInfo   []byte
}

var metaKeyProtocolVersion = []byte(`"` + mcp.MetaKeyProtocolVersion + `"`)

// stateOf reads what params' _meta states of the client: the request's
// params, scanned already (see request.params).
func stateOf(params jsonrpc.Object, raw json.RawMessage) clientStatement {
	// Most requests carry no protocol version at all: skip the scan.
	if !bytes.Contains(raw, metaKeyProtocolVersion) {
		return clientStatement{}
	}
	meta, err := jsonrpc.ScanObject(params.Field("_meta"))
	if err != nil {
		return clientStatement{}
	}
	version, ok := stringValue(meta.Field(mcp.MetaKeyProtocolVersion))
	if !ok || !mcp.IsModernProtocol(version) {
		return clientStatement{}
	}
	return clientStatement{modern: true, version: version,
		capabilities: meta.Field(mcp.MetaKeyClientCapabilities), clientInfo: meta.Field(mcp.MetaKeyClientInfo)}
}

// stated makes what st says the session's: its capabilities (none when it
// states none), its client info when given, and its protocol version.
// Capabilities that do not decode count as none.
func (s *session) stated(st clientStatement) {
	if !st.modern {
		return
	}
	var info *mcp.Implementation
	if len(st.clientInfo) > 0 {
		var i mcp.Implementation
		if json.Unmarshal(st.clientInfo, &i) == nil {
			info = &i
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.protocolVersion = st.version
	if info != nil {
		s.clientInfo = boundImplementation(*info)
	}
	if s.capsKnown && s.capsStated != nil && bytes.Equal(s.capsStated, st.capabilities) {
		return // as the last request stated them: decoded already
	}
	var caps mcp.ClientCapabilities
	if len(st.capabilities) > 0 && json.Unmarshal(st.capabilities, &caps) != nil {
		caps = mcp.ClientCapabilities{}
	}
	s.capabilities = boundCapabilities(caps)
	s.capsKnown = true
	s.capsStated = nil
	if len(st.capabilities) > 0 && len(st.capabilities) <= maxKeptStatement {
		s.capsStated = bytes.Clone(st.capabilities)
	}
}
