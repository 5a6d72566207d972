package server

import (
	"bytes"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// modern reports whether a request uses the stateless protocol of
// 2026-07-28 or later, which carries its version in params._meta.
func modern(params json.RawMessage) bool {
	// Most requests carry no protocol version at all: skip the parse.
	if !bytes.Contains(params, metaKeyProtocolVersion) {
		return false
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	var version string
	_ = json.Unmarshal(p.Meta[mcp.MetaKeyProtocolVersion], &version)
	return mcp.IsModernProtocol(version)
}

var metaKeyProtocolVersion = []byte(`"` + mcp.MetaKeyProtocolVersion + `"`)

// decorateModern adds what 2026-07-28 requires of a result and a legacy
// upstream did not send: resultType, and caching hints on lists and reads
// (SEP-2549; zero TTL and private scope, as mcp-go's own default). Fields
// the result already has are kept.
func decorateModern(method string, result json.RawMessage) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(result, &fields) != nil || fields == nil {
		return result
	}
	add := func(k, v string) {
		if _, ok := fields[k]; !ok {
			fields[k] = json.RawMessage(v)
		}
	}
	add("resultType", `"`+string(mcp.ResultTypeComplete)+`"`)
	switch method {
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read":
		add("ttlMs", "0")
		add("cacheScope", `"`+string(mcp.CacheScopePrivate)+`"`)
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return result
	}
	return b
}
