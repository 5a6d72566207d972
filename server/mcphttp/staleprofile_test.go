package mcphttp

import (
	"net/http"
	"strings"
	"testing"
)

// A user taken out of the group that chose their profile does not keep
// it in a session opened before: with their next token (its claims now
// choose another profile), the session is not found (404), and the
// client's new session sees the profile the claims now choose. A token
// whose claims still choose the session's profile goes on using it.
func TestSessionFollowsTheCallersProfile(t *testing.T) {
	t.Parallel()
	is := newTestIssuer(t)
	base, _, _ := identityHub(t, is)
	alice := &bearerClient{t: t, url: base + "/mcp", token: is.token(t, "alice", "Alice", testAudience, "admins")}
	if code := alice.initialize(); code != http.StatusOK {
		t.Fatalf("initialize: %d", code)
	}
	alice.token = is.token(t, "alice", "Alice", testAudience, "admins") // renewed, still an admin
	if resp, tools := alice.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); resp.StatusCode != http.StatusOK || !strings.Contains(tools, `"f__echo"`) {
		t.Fatalf("a renewed token, still an admin: %d %s", resp.StatusCode, tools)
	}
	alice.token = is.token(t, "alice", "Alice", testAudience, "former-admins") // taken out of admins
	if resp, tools := alice.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the admin session with a token no longer of admins: %d %s, want 404", resp.StatusCode, tools)
	}
	alice.session = ""
	if code := alice.initialize(); code != http.StatusOK {
		t.Fatalf("a new session: %d", code)
	}
	if _, tools := alice.post(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); !strings.Contains(tools, "call_dynamic_tool") || strings.Contains(tools, `"f__echo"`) {
		t.Errorf("the new session sees %s, want the dynamic profile reader", tools)
	}
}
