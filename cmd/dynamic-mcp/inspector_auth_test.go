package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// On --http the inspector has a token of its own, printed to stderr with
// the page's URL (issue 20, finding 1): the MCP token, which every client
// holds, gets 401 on every API path (the export, the clients, clearing);
// the inspector's token gets everything. /metrics stays behind the MCP
// token.
func TestInspectorOwnTokenOnHTTP(t *testing.T) {
	t.Parallel()
	base, stderr := startHTTPHub(t, fmt.Sprintf("mode: flat\ngroups:\n  f: { description: fake, command: %q }\n", fakeBin))
	ui := uiToken(t, stderr)
	if !strings.Contains(stderr.String(), "url="+base+"/ui/") {
		t.Errorf("the page's URL is not on stderr:\n%s", stderr.String())
	}
	mcp := map[string]string{"Authorization": "Bearer " + testToken}
	own := map[string]string{"Authorization": "Bearer " + ui}
	do := func(method, path string, headers map[string]string) int {
		req, _ := http.NewRequest(method, base+path, nil)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		method, path string
		headers      map[string]string
		want         int
	}{
		{"GET", "/ui/api/export", mcp, http.StatusUnauthorized},
		{"GET", "/ui/api/clients", mcp, http.StatusUnauthorized},
		{"GET", "/ui/api/upstreams", mcp, http.StatusUnauthorized},
		{"POST", "/ui/api/clear", mcp, http.StatusUnauthorized},
		{"GET", "/ui/api/export", nil, http.StatusUnauthorized},
		{"GET", "/ui/api/export", own, http.StatusOK},
		{"GET", "/ui/api/clients", own, http.StatusOK},
		{"POST", "/ui/api/clear", own, http.StatusNoContent},
		{"GET", "/ui/", nil, http.StatusOK},
		{"GET", "/metrics", mcp, http.StatusOK},
		{"GET", "/metrics", own, http.StatusUnauthorized},
	} {
		if got := do(tc.method, tc.path, tc.headers); got != tc.want {
			t.Errorf("%s %s with %v: %d, want %d", tc.method, tc.path, tc.headers, got, tc.want)
		}
	}
	// The inspector's token is no MCP token.
	if got := do("POST", "/mcp", own); got != http.StatusUnauthorized {
		t.Errorf("POST /mcp with the inspector's token: %d, want 401", got)
	}
}

// With --insecure-no-auth (loopback only) the inspector needs no token,
// and the page shows rows at once, asking for none (issue 20: it asked,
// and did nothing with an empty one).
func TestInspectorPageWithoutAuth(t *testing.T) {
	t.Parallel()
	ctx := browse(t)
	base, stderr := startHTTPHub(t, fmt.Sprintf("mode: flat\ngroups:\n  files: { description: fake, command: %q }\n", fakeBin), "--insecure-no-auth")
	c := httpClient(t, base, map[string]string{})
	c.initialize("2025-11-25")
	c.waitFlatTools(fakeTools)
	if strings.Contains(stderr.String(), "token for this run") {
		t.Errorf("a token printed under --insecure-no-auth:\n%s", stderr.String())
	}
	browserDo(t, ctx, "open /ui",
		chromedp.Navigate(base+"/ui/"),
		chromedp.WaitVisible(css("#conn.live")))
	c.call("tools/call", map[string]any{"name": "files__echo", "arguments": map[string]any{"text": "no token needed"}})
	browserDo(t, ctx, "wait for the row",
		chromedp.WaitVisible(css(`tr.row[data-method="tools/call"][data-target="echo"][data-status="ok"]`)))
	screenshot(t, ctx, "inspector-no-auth.png")
	browserDo(t, ctx, "wait for the client",
		chromedp.Click(css(`#tabs button[data-tab="clients"]`)),
		chromedp.WaitVisible(css(`tr.session`)))
	if open := browserGet(t, ctx, "is the token dialog open", chromedp.Evaluate[bool](`document.querySelector("#login").open`)); open {
		t.Error("the page asks for a token the hub does not need")
	}
}

// $DYNAMIC_MCP_TOKEN is the credential "default": serve refuses to start
// when it is also a token of http.tokens, or http.tokens names "default"
// too, since a request's credential would then be ambiguous.
func TestServeHTTPCredentialsAmbiguous(t *testing.T) {
	t.Parallel()
	for name, tokens := range map[string]string{
		"same token": fmt.Sprintf("{x: %s}", testToken),
		"same name":  "{default: another-token-0123456789}",
	} {
		path := writeConfig(t, fmt.Sprintf("http:\n  tokens: %s\ngroups:\n  f: { description: fake, command: %q }\n", tokens, fakeBin))
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, hubBin, "serve", "-c", path, "--http", "127.0.0.1:0")
		cmd.Env = append(os.Environ(), "DYNAMIC_MCP_TOKEN="+testToken, "DYNAMIC_MCP_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "DYNAMIC_MCP_TOKEN") {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
	}
}
