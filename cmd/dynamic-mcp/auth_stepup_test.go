package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/auth/authtest"
	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// A call the server refuses for want of a scope (403 insufficient_scope,
// the MCP authorization spec's step-up) says which scopes the sign-in
// needs, and `auth login`, another process, asks for them without being
// told: the user who follows the message is not refused again.
func TestAuthLoginStepsUpToTheScopeACallWasRefusedFor(t *testing.T) {
	t.Parallel()
	a := authtest.NewServer(t)
	a.GrantScopes = true
	a.KeepTokens = true // as a real server does: the narrower token stays good
	hello := helloMCP("hello, with mcp:write")
	a.Resource = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) && !strings.Contains(a.ScopeOf(r.Header.Get("Authorization")), "mcp:write") {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="mcp:read mcp:write", resource_metadata="`+a.URL+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(http.StatusForbidden)
			return
		}
		hello.ServeHTTP(w, r)
	})
	home, cfg, env := protectedHome(t, a.URL)
	if out, err := authLoginR(t, env, cfg); err != nil || !strings.Contains(out, "r: signed in") {
		t.Fatalf("auth login: %v\n%s", err, out)
	}
	if got := a.Authorize.Get("scope"); got != "mcp:read" {
		t.Fatalf("the first sign-in asked for %q, want mcp:read", got)
	}

	c := startProcess(t, []string{"DYNAMIC_MCP_HOME=" + home}, hubBin, "serve", "-c", cfg)
	c.initialize("2025-06-18")
	await.Costly(t, 10*time.Second, "the group", func() bool {
		return strings.Contains(string(c.call("tools/list", nil)), "r__hello")
	})
	text, isErr := c.callText("r__hello", nil)
	if want := "needs scope mcp:read mcp:write; sign in again with: dynamic-mcp auth login r"; !isErr || !strings.Contains(text, want) {
		t.Fatalf("the refused call says %q (error %v); want it to say %q", text, isErr, want)
	}

	if out, err := authLoginR(t, env, cfg); err != nil || !strings.Contains(out, "r: signed in") {
		t.Fatalf("auth login again: %v\n%s", err, out)
	}
	if got := a.Authorize.Get("scope"); got != "mcp:read mcp:write" {
		t.Fatalf("the sign-in after the refusal asked for %q, want mcp:read mcp:write", got)
	}
	// The server still takes the old token, and refuses the call made with
	// it: the hub takes the new sign-in up, and the call goes through.
	if text, isErr := c.callText("r__hello", nil); isErr || text != "hello, with mcp:write" {
		t.Fatalf("the call after signing in again: %q (error %v)", text, isErr)
	}
}
