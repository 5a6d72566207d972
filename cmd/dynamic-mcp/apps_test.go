package main

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestMCPApps runs the official MCP Apps example server
// (@modelcontextprotocol/server-basic-vanillajs) behind the hub and a host
// built of the official libraries in front of it
// (testdata/sdkclient/apps.mjs: the TypeScript SDK v2 client, the ext-apps
// AppBridge and App): the tool names its view under the group's ui://
// namespace, the view reads back byte for byte as the package ships it,
// and the view's call of its server's tool (the example's button) reaches
// the server, in both modes. The handshake comes while the server starts,
// when the hub may not know yet that it serves an app: the extension's
// declaration is checked where the hub knows it (the check is skipped
// otherwise; server's in-process tests check it with upstreams up).
func TestMCPApps(t *testing.T) {
	t.Parallel()
	script := filepath.Join(repoDir, "testdata", "sdkclient", "apps.mjs")
	server := npmTestTool(t, "@modelcontextprotocol", "server-basic-vanillajs", "dist", "index.js")
	npmTestTool(t, "@modelcontextprotocol", "ext-apps", "package.json")
	html := filepath.Join(filepath.Dir(server), "mcp-app.html")
	for _, mode := range []string{"flat", "dynamic"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			cfg := writeConfig(t, fmt.Sprintf(`
mode: %s
settings: { stop_grace: 1s, `+nodeWaits+` }
groups:
  apps:
    description: The MCP Apps example
    expose: [get-time]
    command: node
    args: [%q, "--stdio"]
`, mode, server))
			runSDKClientEnv(t, nil, []string{script, "--hub", hubBin, "--config", cfg, "--group", "apps", "--html", html, "--cold"})
		})
	}
}
