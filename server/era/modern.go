// Package era is the 2026-07-28 era's stage of the request chain: a
// request that states that version in its _meta is checked before the
// hub serves it (Statement.Check) and its answer told as that version tells
// it (ModernError, DecorateModern). Every request passes it, not only the
// calls that go upstream: the era changes how tools/list and the rest are
// answered too. What such a request states of its client (StateOf) is
// read here too, before the hub serves it, for the hub to keep as the
// session's. The multi round-trip requests of the era are
// server/rounds'.
package era

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/clients"
	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// Modern reports whether a request uses the stateless protocol of
// 2026-07-28 or later, which carries its version in params._meta. The
// params are a decoded message's (see jsonrpc.Decode), checked already.
func Modern(params json.RawMessage) bool {
	return mcp.IsModernProtocol(MetaVersion(params))
}

// MetaVersion is the protocol version params._meta names, "" when it
// names none (or params are no object).
func MetaVersion(params json.RawMessage) string {
	// Most requests carry no protocol version at all: skip the scan.
	if !bytes.Contains(params, metaKeyProtocolVersion) {
		return ""
	}
	p, err := jsonrpc.ScanObject(params)
	if err != nil {
		return ""
	}
	meta, err := jsonrpc.ScanObject(p.Field("_meta"))
	if err != nil {
		return ""
	}
	version, _ := jsonrpc.StringValue(meta.Field(mcp.MetaKeyProtocolVersion))
	return version
}

// unsupportedVersion is the error answering a request of a protocol
// version the hub does not serve (2026-07-28, basic/versioning): -32022
// with the versions it serves (those server/discover lists: every version
// mcp-go knows, newest first) and the one asked for.
func unsupportedVersion(requested string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: mcp.UNSUPPORTED_PROTOCOL_VERSION,
		Message: fmt.Sprintf("Unsupported protocol version: %q", clip.Echo(requested)),
		Data:    mcp.UnsupportedProtocolVersionData{Supported: slices.Clone(mcp.ValidProtocolVersions), Requested: clip.Echo(requested)}}
}

// removedInModern are the methods 2026-07-28 removed (its changelog; tasks
// moved to an extension without tasks/list and tasks/result): a request of
// that version naming one is answered as for a method that does not
// exist.
var removedInModern = map[string]bool{
	"initialize": true, "ping": true, "logging/setLevel": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"tasks/list": true, "tasks/result": true,
}

// refusal is why the hub does not serve a 2026-07-28 request stating
// version and caps (the raw value of its client's capabilities) in its
// _meta, nil when it does: decided once, by StateOf, for Statement.Served
// and Check, and for the era stage (call.Asked.Refusal).
func refusal(version string, caps []byte) *jsonrpc.Error {
	if len(caps) == 0 || caps[0] != '{' {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Invalid params: _meta lacks "+mcp.MetaKeyClientCapabilities+", an object")
	}
	if !slices.Contains(mcp.ValidProtocolVersions, version) {
		return unsupportedVersion(version)
	}
	return nil
}

// ModernError is err as a 2026-07-28 client is told it: a resource that
// does not exist is -32602 there (SEP-2164), -32002 before, whether the
// hub or a legacy upstream said so; message and data are kept.
func ModernError(err error) error {
	var e *jsonrpc.Error
	if errors.As(err, &e) && e.Code == jsonrpc.CodeResourceNotFound {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: e.Message, Data: e.Data}
	}
	return err
}

var metaKeyProtocolVersion = []byte(`"` + mcp.MetaKeyProtocolVersion + `"`)

// What DecorateModern adds, encoded once.
var (
	modernResultType = jsonrpc.Member{Key: "resultType", Value: []byte(`"` + string(mcp.ResultTypeComplete) + `"`)}
	modernTTL        = jsonrpc.Member{Key: "ttlMs", Value: []byte(`0`)}
	modernCacheScope = jsonrpc.Member{Key: "cacheScope", Value: []byte(`"` + string(mcp.CacheScopePrivate) + `"`)}
)

// DecorateModern adds what 2026-07-28 requires of a result and a legacy
// upstream did not send: resultType, and caching hints on lists and reads
// (SEP-2549; zero TTL and private scope, as mcp-go's own default). Fields
// the result already has are kept, and so is every byte of it: the new
// fields are spliced in after the last one.
func DecorateModern(method string, result json.RawMessage) json.RawMessage {
	add := []jsonrpc.Member{modernResultType}
	switch method {
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read",
		"skills/list", "skills/get", "resources/directory/read": // SEP-2640's are cacheable results too
		add = append(add, modernTTL, modernCacheScope)
	}
	b, err := jsonrpc.AddMissing(result, add...)
	if err != nil {
		return result
	}
	return b
}

// IsInputRequired reports whether a result is input_required.
func IsInputRequired(res json.RawMessage) bool {
	if !bytes.Contains(res, []byte(`"`+mcp.ResultTypeInputRequired+`"`)) {
		return false
	}
	o, err := jsonrpc.ScanObject(res)
	if err != nil {
		return false
	}
	t, _ := jsonrpc.StringValue(o.Field("resultType"))
	return t == string(mcp.ResultTypeInputRequired)
}

// Stage checks a 2026-07-28 request and decorates its answer; any other
// passes as it is.
type Stage struct{}

// Handle refuses c where the hub cannot serve it as asked, and otherwise
// passes it on and tells its answer as 2026-07-28 does: an error in that
// era's codes, a result with resultType (and caching hints), unless it is
// an input_required answer or one the hub's protocol gave as final.
func (Stage) Handle(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	if !c.Modern {
		return next.Handle(ctx, c)
	}
	method := c.Method // the client's: the stages after it route the call under the upstream's
	// What its _meta states was decided where the hub read it (StateOf).
	if err := check(c.Refusal, method); err != nil {
		return nil, err
	}
	res, err := next.Handle(ctx, c)
	if err != nil {
		return nil, ModernError(err)
	}
	if c.Final || IsInputRequired(res) {
		return res, nil
	}
	return DecorateModern(method, res), nil
}

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

// Statement is what a 2026-07-28 request's _meta says of its client, as
// raw JSON values, and whether the hub serves it; Modern is false for a
// request of an older era (or one that states no such version).
type Statement struct {
	Modern       bool
	Version      string
	Capabilities []byte
	ClientInfo   []byte
	// refused is why the hub does not serve what is stated (refusal),
	// decided once where the statement is read (StateOf); nil when it
	// serves it.
	refused *jsonrpc.Error
}

// Served reports whether the hub serves what st states: a protocol
// version of its own, and the client's capabilities, an object (what
// Check refuses first). A request that states anything else is refused,
// and leaves its client as it was.
func (st Statement) Served() bool { return st.Modern && st.refused == nil }

// Refusal is why the hub does not serve what st states, as StateOf
// decided it: nil when it serves it. The hub carries it on the call
// (call.Asked.Refusal) for the era stage.
func (st Statement) Refusal() *jsonrpc.Error { return st.refused }

// Check refuses st's request, of method, where the hub cannot serve it as
// asked, in the order mcp-go's server checks the same: what the request
// states of its client first (Refusal: _meta without the client's
// capabilities, -32602; a version the hub does not serve, -32022), then
// a method that version removed (-32601). nil lets it through.
func (st Statement) Check(method string) *jsonrpc.Error { return check(st.refused, method) }

// check is Check of a request of method that StateOf refused with
// refused (nil when it serves what the request states): the one check of
// Check and the era stage.
func check(refused *jsonrpc.Error, method string) *jsonrpc.Error {
	if refused != nil {
		return refused
	}
	if removedInModern[method] {
		return jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found: "+method+" was removed in protocol version "+mcp.ProtocolVersion20260728)
	}
	return nil
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
	if st := statedIn(meta); st.Modern {
		return st
	}
	return Statement{}
}

// statedIn is what meta, a request's _meta scanned, states, whatever
// version it names, and whether the hub serves it.
func statedIn(meta jsonrpc.Object) Statement {
	version, ok := jsonrpc.StringValue(meta.Field(mcp.MetaKeyProtocolVersion))
	caps := meta.Field(mcp.MetaKeyClientCapabilities)
	return Statement{Modern: ok && mcp.IsModernProtocol(version), Version: version,
		Capabilities: caps, ClientInfo: meta.Field(mcp.MetaKeyClientInfo), refused: refusal(version, caps)}
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
	i = clients.BoundImplementation(i)
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
	return clients.BoundCapabilities(caps), keep
}
