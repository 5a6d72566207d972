package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// modern reports whether a request uses the stateless protocol of
// 2026-07-28 or later, which carries its version in params._meta. The
// params are a decoded message's (see jsonrpc.Decode), checked already.
func modern(params json.RawMessage) bool {
	return mcp.IsModernProtocol(metaVersion(params))
}

// metaVersion is the protocol version params._meta names, "" when it
// names none (or params are no object).
func metaVersion(params json.RawMessage) string {
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
	version, _ := stringValue(meta.Field(mcp.MetaKeyProtocolVersion))
	return version
}

// unsupportedVersion is the error answering a request of a protocol
// version the hub does not serve (2026-07-28, basic/versioning): -32022
// with the versions it serves (those server/discover lists: every version
// mcp-go knows, newest first) and the one asked for.
func unsupportedVersion(requested string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: codeUnsupportedVersion,
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

// checkModern refuses a 2026-07-28 request the hub cannot serve as asked,
// in the order mcp-go's server checks the same: _meta without the client's
// capabilities (-32602), a version the hub does not serve (-32022), a
// method that version removed (-32601). nil lets it through.
func checkModern(req *request) *jsonrpc.Error {
	meta, _ := jsonrpc.ScanObject(req.field("_meta"))
	if caps := meta.Field(mcp.MetaKeyClientCapabilities); len(caps) == 0 || caps[0] != '{' {
		return errorf(codeInvalidParams, "Invalid params: _meta lacks "+mcp.MetaKeyClientCapabilities+", an object")
	}
	if v, _ := stringValue(meta.Field(mcp.MetaKeyProtocolVersion)); !slices.Contains(mcp.ValidProtocolVersions, v) {
		return unsupportedVersion(v)
	}
	if method := req.msg.Method; removedInModern[method] {
		return errorf(codeMethodNotFound, "Method not found: "+method+" was removed in protocol version "+mcp.ProtocolVersion20260728)
	}
	return nil
}

// modernError is err as a 2026-07-28 client is told it: a resource that
// does not exist is -32602 there (SEP-2164), -32002 before, whether the
// hub or a legacy upstream said so; message and data are kept.
func modernError(err error) error {
	var e *rpcError
	if errors.As(err, &e) && e.Code == codeResourceNotFound {
		return &rpcError{Code: codeInvalidParams, Message: e.Message, Data: e.Data}
	}
	return err
}

var metaKeyProtocolVersion = []byte(`"` + mcp.MetaKeyProtocolVersion + `"`)

// What decorateModern adds, encoded once.
var (
	modernResultType = jsonrpc.Member{Key: "resultType", Value: []byte(`"` + string(mcp.ResultTypeComplete) + `"`)}
	modernTTL        = jsonrpc.Member{Key: "ttlMs", Value: []byte(`0`)}
	modernCacheScope = jsonrpc.Member{Key: "cacheScope", Value: []byte(`"` + string(mcp.CacheScopePrivate) + `"`)}
)

// decorateModern adds what 2026-07-28 requires of a result and a legacy
// upstream did not send: resultType, and caching hints on lists and reads
// (SEP-2549; zero TTL and private scope, as mcp-go's own default). Fields
// the result already has are kept, and so is every byte of it: the new
// fields are spliced in after the last one.
func decorateModern(method string, result json.RawMessage) json.RawMessage {
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
