package server

import (
	"crypto/sha256"
	"encoding/hex"
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
