package view

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// maxNameLen is the spec's limit on tool names (1-128 characters).
const maxNameLen = 128

// separator joins group and tool in flat mode: <group>__<tool>.
const separator = "__"

// ExposedName is the name the client sees for an upstream tool or prompt:
// <group>__<name>, or the bare name for a group with prefix: false. A name
// over 128 characters is cut and given a hash of the whole, so it stays
// unique and the same across restarts.
func ExposedName(group, name string, prefix bool) string {
	full := name
	if prefix {
		full = group + separator + name
	}
	if len(full) <= maxNameLen {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	tag := hex.EncodeToString(sum[:])[:8]
	return full[:maxNameLen-len(tag)-1] + "_" + tag
}

// withName is the definition def with its name set to name, every other
// byte as it was (null taken for {}, as the hub's setField takes it).
func withName(def json.RawMessage, name string) (json.RawMessage, error) {
	if string(bytes.TrimSpace(def)) == "null" {
		def = json.RawMessage(`{}`)
	}
	q, _ := jsonrpc.Marshal(name) // a string always encodes
	return jsonrpc.SetField(def, "name", q)
}
