package era

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

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
		Message: fmt.Sprintf("Unsupported protocol version: %q", requested),
		Data:    mcp.UnsupportedProtocolVersionData{Supported: slices.Clone(mcp.ValidProtocolVersions), Requested: requested}}
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

// CheckModern refuses a 2026-07-28 request of method whose params' _meta
// is meta, where the hub cannot serve it as asked, in the order mcp-go's
// server checks the same: _meta without the client's capabilities
// (-32602), a version the hub does not serve (-32022), a method that
// version removed (-32601). nil lets it through.
func CheckModern(method string, meta json.RawMessage) *jsonrpc.Error {
	m, _ := jsonrpc.ScanObject(meta)
	if caps := m.Field(mcp.MetaKeyClientCapabilities); len(caps) == 0 || caps[0] != '{' {
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Invalid params: _meta lacks "+mcp.MetaKeyClientCapabilities+", an object")
	}
	if v, _ := jsonrpc.StringValue(m.Field(mcp.MetaKeyProtocolVersion)); !slices.Contains(mcp.ValidProtocolVersions, v) {
		return unsupportedVersion(v)
	}
	if removedInModern[method] {
		return jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found: "+method+" was removed in protocol version "+mcp.ProtocolVersion20260728)
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
