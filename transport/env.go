package transport

import (
	"os"
	"path/filepath"
	"runtime"
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

// commandPath is where command is found when the server's env sets PATH:
// that PATH's first directory holding an executable of that name. A
// server's PATH in the config wins over the hub's own, which (for the
// shared hub) is the PATH of whichever client started it. command itself
// when it names a path, when env sets no PATH, when nothing is found
// there (exec then looks in the hub's PATH and says what is missing), and
// on Windows, whose lookup (PATHEXT) is left to exec.
func commandPath(command string, env map[string]string) string {
	path, ok := env["PATH"]
	if !ok || runtime.GOOS == "windows" || strings.ContainsRune(command, '/') {
		return command
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // a relative entry would depend on the hub's directory
		}
		p := filepath.Join(dir, command)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return command
}
