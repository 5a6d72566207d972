package main

import (
	"fmt"
	"path/filepath"
	"testing"
)

// The hijack of issue 20 (finding 1), end to end with two clients of the
// official TypeScript SDK over Streamable HTTP (testdata/sdkclient/
// hijack.mjs): client B, with a token of its own, is given client A's
// session id and tries A's GET stream, a tools/call, tasks/result,
// tasks/get and DELETE with it, each 404; A's session goes on (its call
// answered, its log messages still down its own stream, its task's result
// its own); B's MCP token gets 401 on the inspector's export and clients.
func TestSDKClientHijack(t *testing.T) {
	t.Parallel()
	npmTestTool(t, "@modelcontextprotocol", "sdk", "package.json")
	const tokenA, tokenB = "sdk-client-a-token-0123456789", "sdk-client-b-token-0123456789"
	cfg := fmt.Sprintf(`
mode: flat
settings: { stop_grace: 1s, `+nodeWaits+` }
http:
  tokens: { a: %s, b: %s }
groups:
  everything:
    description: The reference server
    url: %s
`, tokenA, tokenB, sharedEverythingURL(t))
	base, _ := startHTTPHub(t, cfg)
	runSDKClient(t, []string{filepath.Join(repoDir, "testdata", "sdkclient", "hijack.mjs"), "--url", base, "--token-a", tokenA, "--token-b", tokenB})
}
