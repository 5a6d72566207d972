package view

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
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

// claim is def, a tool's or prompt's (kind), renamed name for s, the
// name recorded in owner (exposed name -> server id); not ok when another
// server has the name already (a problem of the view, hint added to it)
// or def takes no name.
func (v *View) claim(owner map[string]string, kind, name string, s *upstream.Server, def json.RawMessage, hint string) (json.RawMessage, bool) {
	if prev, dup := owner[name]; dup {
		v.Problems = append(v.Problems, fmt.Sprintf("%s %q of %s is hidden: its name collides with a %s of %s%s", kind, name, s.Config.ID(), kind, prev, hint))
		return nil, false
	}
	raw, err := withName(def, name)
	if err != nil {
		return nil, false
	}
	owner[name] = s.Config.ID()
	return raw, true
}
