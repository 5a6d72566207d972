package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// runCommand runs one command line through run in this process, as main
// would, with stdin: it returns what the command wrote to stdout and to
// stderr, and the exit status main would end with. The environment and
// the working directory are the test's: a test that needs its own (HOME
// for a client's config) sets them with t.Setenv or t.Chdir, and so
// cannot be parallel.
func runCommand(t testing.TB, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut lockedBuffer
	err := run(t.Context(), args, strings.NewReader(stdin), &out, &errOut)
	code = exitStatus(err, &errOut)
	return out.String(), errOut.String(), code
}

// withHome makes home the user's home directory for the rest of the test
// (a client's config is found under it) and the hub's home under it,
// with no config path or Codex home from the environment.
func withHome(t *testing.T, home string) {
	t.Setenv("HOME", home)
	t.Setenv("DYNAMIC_MCP_HOME", filepath.Join(home, ".dynamic-mcp"))
	t.Setenv("DYNAMIC_MCP_CONFIG", "")
	t.Setenv("CODEX_HOME", "")
}
