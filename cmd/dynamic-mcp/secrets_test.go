package main

import (
	"fmt"
	"strings"
	"testing"
)

// The reference everything server's get-env shows its environment to any
// client: through the hub it holds none of the hub's DYNAMIC_MCP_*
// variables, nor the HTTP token under another name, and does hold the
// rest and the server's env:.
func TestChildrenGetNoSecretOfTheHub(t *testing.T) {
	t.Parallel()
	hubEnv := []string{"DYNAMIC_MCP_TOKEN=token-from-the-environment", "DMCP_TEST_HUB_TOKEN=token-from-the-config",
		"DMCP_TEST_COPY=token-from-the-environment", "DMCP_TEST_PLAIN=an ordinary value"}
	c := startHubEnv(t, hubEnv, fmt.Sprintf(`
http: { token: "${DMCP_TEST_HUB_TOKEN}" }
settings: { `+nodeWaits+` }
groups:
  everything:
    description: The reference server
    command: node
    args: %s
    env: { DMCP_TEST_FROM_ENV: "given by env:" }
`, yamlList(referenceServer(t, "server-everything", "stdio")[1:])))
	c.initialize("2025-06-18")
	c.waitGroupsReady("everything")
	res := c.call("tools/call", map[string]any{"name": "call_dynamic_tool",
		"arguments": map[string]any{"group": "everything", "name": "get-env", "args": map[string]any{}}})
	env, isErr := toolText(t, res)
	if isErr || !strings.Contains(env, "DMCP_TEST_PLAIN") || !strings.Contains(env, "an ordinary value") || !strings.Contains(env, "given by env:") {
		t.Fatalf("get-env through the hub:\n%s", env)
	}
	for _, secret := range []string{"DYNAMIC_MCP_", "token-from-the-environment", "token-from-the-config", "DMCP_TEST_HUB_TOKEN", "DMCP_TEST_COPY"} {
		if strings.Contains(env, secret) {
			t.Errorf("the upstream sees %s:\n%s", secret, env)
		}
	}
}
