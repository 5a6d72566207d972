package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/auth/authtest"
	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// helloMCP is an MCP server over Streamable HTTP with one tool, hello,
// whose answer is text.
func helloMCP(text string) *mcpserver.StreamableHTTPServer {
	s := mcpserver.NewMCPServer("protected", "1")
	s.AddTool(mcp.NewTool("hello", mcp.WithDescription("says hello")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(text), nil
	})
	return mcpserver.NewStreamableHTTPServer(s)
}

// protectedHome writes, in a new DYNAMIC_MCP_HOME, a config of one group
// r on the OAuth-protected MCP server at url, and returns the home, the
// config's path and the environment that names the home.
func protectedHome(t *testing.T, url string) (home, cfg string, env []string) {
	t.Helper()
	home = t.TempDir()
	cfg = filepath.Join(home, "c.yaml")
	os.WriteFile(cfg, []byte(`mode: flat
groups:
  r:
    description: a protected server
    url: `+url+`/mcp
    transport: streamable-http
    retry: { initial_interval: 100ms, reconnect_interval: 200ms }
`), 0o600)
	return home, cfg, append(os.Environ(), "DYNAMIC_MCP_HOME="+home)
}

func TestAuthLoginThenServeWithRefreshAndLogout(t *testing.T) {
	t.Parallel()
	a := authtest.NewServer(t)
	a.Resource = helloMCP("hello, signed-in hub")
	home, cfg, env := protectedHome(t, a.URL)

	// Before signing in, the group is unavailable with what to do.
	c := startProcess(t, []string{"DYNAMIC_MCP_HOME=" + home}, hubBin, "serve", "-c", cfg)
	c.initialize("2025-06-18")
	await.Costly(t, 10*time.Second, "the sign-in hint", func() bool {
		return strings.Contains(c.stderr.String(), "the server requires signing in: run: dynamic-mcp auth login r")
	})

	// auth login prints the URL; the test plays the browser.
	if out, err := authLoginR(t, env, cfg); err != nil || !strings.Contains(out, "r: signed in") {
		t.Fatalf("auth login: %v\n%s", err, out)
	}
	status := exec.Command(hubBin, "auth", "status", "-c", cfg)
	status.Env = env
	out, err := status.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "r  ") || !strings.Contains(string(out), a.URL) || !strings.Contains(string(out), "true") ||
		!strings.Contains(string(out), " dynamic ") || !regexp.MustCompile(`  20\d\d-\d\d-\d\dT`).Match(out) || strings.Contains(string(out), "expires") {
		t.Errorf("auth status: %v\n%s", err, out)
	}
	tokenFile := filepath.Join(home, "oauth-servers", "r.sealed")
	if fi, err := os.Stat(tokenFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v %v", fi, err)
	}
	if rec, err := auth.NewStore(filepath.Join(home, "oauth-servers")).Load("r", a.URL+"/mcp"); err != nil {
		t.Errorf("the sign-in on file: %v", err)
	} else if b, _ := os.ReadFile(tokenFile); bytes.Contains(b, []byte(rec.AccessToken)) || bytes.Contains(b, []byte(rec.RefreshToken)) {
		t.Error("the token file holds a token in plaintext")
	}

	// The hub picks the sign-in up (it reconnects on its schedule) and
	// sends the token; a revoked token is renewed once and the call goes on.
	await.Costly(t, 10*time.Second, "the group after signing in", func() bool {
		return strings.Contains(string(c.call("tools/list", nil)), "r__hello")
	})
	if text, _ := c.callText("r__hello", nil); text != "hello, signed-in hub" {
		t.Fatalf("call: %q", text)
	}
	before, _ := auth.NewStore(filepath.Join(home, "oauth-servers")).Load("r", a.URL+"/mcp")
	a.Revoke()
	if text, isErr := c.callText("r__hello", nil); isErr || text != "hello, signed-in hub" {
		t.Fatalf("call after the token was revoked: %q", text)
	}
	after, _ := auth.NewStore(filepath.Join(home, "oauth-servers")).Load("r", a.URL+"/mcp")
	if before == nil || after == nil || after.RefreshToken == before.RefreshToken {
		t.Errorf("the rotated refresh token was not saved: before %v after %v", before, after)
	}
	if strings.Contains(c.stderr.String(), after.AccessToken) || strings.Contains(c.stderr.String(), after.RefreshToken) {
		t.Error("a token shows in the hub's log")
	}

	logout := exec.Command(hubBin, "auth", "logout", "r", "-c", cfg)
	logout.Env = env
	if out, err := logout.CombinedOutput(); err != nil || !strings.Contains(string(out), "signed out") {
		t.Errorf("logout: %v %s", err, out)
	}
	if _, err := os.Stat(tokenFile); !os.IsNotExist(err) {
		t.Errorf("the token file is still there: %v", err)
	}
}

// authLoginR runs `auth login r` of cfg with env, playing the browser
// (visitURL) on the URL it prints: its stdout, and how it exited.
func authLoginR(t *testing.T, env []string, cfg string) (string, error) {
	t.Helper()
	login := exec.Command(hubBin, "auth", "login", "r", "-c", cfg, "--no-browser", "--timeout", "20s")
	login.Env = env
	stderr, _ := login.StderrPipe()
	var stdout strings.Builder
	login.Stdout = &stdout
	if err := login.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "http") {
			go visitURL(line)
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	err := login.Wait()
	return stdout.String(), err
}

// visitURL plays the browser: it follows the authorization redirect to
// the hub's loopback callback.
func visitURL(u string) {
	if resp, err := testClient.Get(u); err == nil {
		resp.Body.Close()
	}
}

// auth login of a group that reaches its server through mcp-remote (as
// clients' configs often do, and import keeps) says to make it url:.
func TestAuthLoginOfMCPRemoteNamesItsURL(t *testing.T) {
	home := t.TempDir()
	withHome(t, home)
	cfg := filepath.Join(home, "c.yaml")
	os.WriteFile(cfg, []byte(`groups:
  linear:
    description: issues
    command: `+fakeBin+`
    args: ["-y", "mcp-remote", "https://mcp.linear.app/sse"]
  local:
    description: a local server
    command: `+fakeBin+`
`), 0o600)
	_, errOut, err := runCLI(t, "auth", "login", "linear", "-c", cfg)
	if err == nil || !strings.Contains(errOut, "linear runs mcp-remote, which signs in by itself") || !strings.Contains(errOut, "url: https://mcp.linear.app/sse") {
		t.Errorf("auth login of mcp-remote: %v\n%s", err, errOut)
	}
	if _, errOut, err = runCLI(t, "auth", "login", "local", "-c", cfg); err == nil || !strings.Contains(errOut, "only url: servers sign in") {
		t.Errorf("auth login of a process: %v\n%s", err, errOut)
	}
}
