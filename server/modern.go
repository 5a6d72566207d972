package server

import (
	"bytes"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// modern reports whether a request uses the stateless protocol of
// 2026-07-28 or later, which carries its version in params._meta. The
// params are a decoded message's (see jsonrpc.Decode), checked already.
func modern(params json.RawMessage) bool {
	// Most requests carry no protocol version at all: skip the scan.
	if !bytes.Contains(params, metaKeyProtocolVersion) {
		return false
	}
	p, err := jsonrpc.ScanObject(params)
	if err != nil {
		return false
	}
	meta, err := jsonrpc.ScanObject(p.Field("_meta"))
	if err != nil {
		return false
	}
	version, ok := stringValue(meta.Field(mcp.MetaKeyProtocolVersion))
	return ok && mcp.IsModernProtocol(version)
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
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read":
		add = append(add, modernTTL, modernCacheScope)
	}
	b, err := jsonrpc.AddMissing(result, add...)
	if err != nil {
		return result
	}
	return b
}
