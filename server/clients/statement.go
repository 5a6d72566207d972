package clients

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

var metaKeyProtocolVersion = []byte(`"` + mcp.MetaKeyProtocolVersion + `"`)

// Statement is what a 2026-07-28 request's _meta says of its client, as
// raw JSON values; Modern is false for a request of an older era (or one
// that states no such version).
type Statement struct {
	Modern       bool
	Version      string
	Capabilities []byte
	ClientInfo   []byte
}

// StateOf reads what params' _meta states of the client: the request's
// params, scanned already, and raw, the same params unscanned.
func StateOf(params jsonrpc.Object, raw json.RawMessage) Statement {
	// Most requests carry no protocol version at all: skip the scan.
	if !bytes.Contains(raw, metaKeyProtocolVersion) {
		return Statement{}
	}
	meta, err := jsonrpc.ScanObject(params.Field("_meta"))
	if err != nil {
		return Statement{}
	}
	version, ok := jsonrpc.StringValue(meta.Field(mcp.MetaKeyProtocolVersion))
	if !ok || !mcp.IsModernProtocol(version) {
		return Statement{}
	}
	return Statement{Modern: true, Version: version,
		Capabilities: meta.Field(mcp.MetaKeyClientCapabilities), ClientInfo: meta.Field(mcp.MetaKeyClientInfo)}
}

// Info is the client info st states, bounded; nil when it states none or
// what it states does not decode.
func (st Statement) Info() *mcp.Implementation {
	if len(st.ClientInfo) == 0 {
		return nil
	}
	var i mcp.Implementation
	if json.Unmarshal(st.ClientInfo, &i) != nil {
		return nil
	}
	i = BoundImplementation(i)
	return &i
}

// Same reports whether st states the capabilities kept is the encoding of
// (see Caps): the session has them decoded already.
func (st Statement) Same(kept []byte) bool {
	return kept != nil && bytes.Equal(kept, st.Capabilities)
}

// Caps are the capabilities st states, bounded (none when it states none;
// capabilities that do not decode count as none), and their encoding to
// keep to recognise the next request's as the same: nil when too large.
func (st Statement) Caps() (caps mcp.ClientCapabilities, keep []byte) {
	if len(st.Capabilities) > 0 && json.Unmarshal(st.Capabilities, &caps) != nil {
		caps = mcp.ClientCapabilities{}
	}
	if len(st.Capabilities) > 0 && len(st.Capabilities) <= maxKeptStatement {
		keep = bytes.Clone(st.Capabilities)
	}
	return BoundCapabilities(caps), keep
}
