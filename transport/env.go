package transport

import (
	"slices"
	"strings"
)

// hubEnvPrefix starts the names of the hub's own environment variables
// (DYNAMIC_MCP_TOKEN, DYNAMIC_MCP_HOME, DYNAMIC_MCP_CONFIG ...). A child
// never inherits them: they are the hub's settings and secrets, and an
// upstream can show its environment to any client (the reference
// everything server's get-env tool does).
const hubEnvPrefix = "DYNAMIC_MCP_"

// hubTokenVar holds the hub's HTTP bearer token when it is not in the
// config. Its value is kept from children under any other name too.
const hubTokenVar = hubEnvPrefix + "TOKEN"

// childEnv is the environment of a child: environ (the hub's) without
// its DYNAMIC_MCP_* variables and without any variable whose value is one
// of hide or the value of DYNAMIC_MCP_TOKEN, then set's variables, which
// may set any name, these included.
func childEnv(environ []string, hide []string, set map[string]string) []string {
	hide = slices.Clone(hide)
	for _, kv := range environ {
		if k, v, _ := strings.Cut(kv, "="); strings.EqualFold(k, hubTokenVar) {
			hide = append(hide, v)
		}
	}
	env := make([]string, 0, len(environ)+len(set))
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		// Names compare case-insensitively: Windows ignores their case,
		// and on Unix a lower-case dynamic_mcp_ is no one else's either.
		if len(k) >= len(hubEnvPrefix) && strings.EqualFold(k[:len(hubEnvPrefix)], hubEnvPrefix) {
			continue
		}
		if v != "" && slices.Contains(hide, v) {
			continue
		}
		env = append(env, kv)
	}
	// Sorted, so that the child's environment does not depend on the
	// order of a map.
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+set[k])
	}
	return env
}
