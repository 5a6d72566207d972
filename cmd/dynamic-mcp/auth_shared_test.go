package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/auth/authtest"
	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// Three hubs (three processes, one config each, as three clients'
// entries) on one sign-in, against an authorization server that rotates
// refresh tokens, lets access tokens lapse in 2 s and revokes the grant
// when a used refresh token comes again (ory/hydra, Notion), each called
// without pause: the renewals of the three take turns through the token
// store's lock, so the grant stands and every call is answered. Before the
// lock, two hubs renewed with the same refresh token and every call after
// failed (issue 22).
func TestHubsShareOneSignInAcrossRenewals(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for seconds")
	}
	t.Parallel()
	a, home := signedIn(t)
	hubs := make([]*client, 3)
	for i := range hubs {
		cfg := filepath.Join(home, fmt.Sprintf("client%d.yaml", i))
		os.WriteFile(cfg, []byte(protectedConfig(a)), 0o600)
		hubs[i] = startProcess(t, []string{"DYNAMIC_MCP_HOME=" + home}, hubBin, "serve", "-c", cfg)
		hubs[i].initialize("2025-06-18")
	}
	callThroughRenewals(t, a, hubs)
}

// protectedConfig is a config of one group: a's protected server.
func protectedConfig(a *authtest.Server) string {
	return `mode: flat
groups:
  r:
    description: a protected server
    url: ` + a.URL + `/mcp
    transport: streamable-http
`
}

// renewingServer is an authorization server that rotates refresh tokens,
// lets access tokens lapse in 2 s and revokes the grant when a used
// refresh token comes again, in front of a server with one tool (hello).
func renewingServer(t *testing.T) *authtest.Server {
	a := authtest.NewServer(t)
	a.AccessTTL, a.RevokeOnReplay = 2*time.Second, true
	a.Resource = helloMCP("hello, signed-in hub")
	return a
}

// signedIn is a renewingServer and a home (DYNAMIC_MCP_HOME) whose token
// store holds a sign-in to it.
func signedIn(t *testing.T) (*authtest.Server, string) {
	a := renewingServer(t)
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	rec, err := auth.Login(ctx, "r", a.URL+"/mcp", auth.LoginOptions{Open: func(u string) error { go visitURL(u); return nil }, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.NewStore(filepath.Join(home, "oauth-servers")).Save(rec); err != nil {
		t.Fatal(err)
	}
	return a, home
}

// callThroughRenewals has each client call hello without pause for 8 s
// (DYNAMIC_MCP_TEST_SHARED_FOR: the 30 s), through the renewals
// of a's 2 s tokens, and fails unless every call is answered, the grant
// stands and the tokens were renewed as often as they lapsed.
func callThroughRenewals(t *testing.T, a *authtest.Server, hubs []*client) {
	t.Helper()
	runFor := 8 * time.Second
	if d, err := time.ParseDuration(os.Getenv("DYNAMIC_MCP_TEST_SHARED_FOR")); err == nil {
		runFor = d // the 30 s: DYNAMIC_MCP_TEST_SHARED_FOR=30s
	}
	for i, c := range hubs {
		await.Costly(t, 10*time.Second, fmt.Sprintf("client %d's tool", i), func() bool {
			return strings.Contains(string(c.call("tools/list", nil)), "r__hello")
		})
	}
	type tally struct {
		answered, failed int
		first            string
	}
	tallies := make([]tally, len(hubs))
	var wg sync.WaitGroup
	for i, c := range hubs {
		wg.Go(func() {
			for end := time.Now().Add(runFor); time.Now().Before(end); {
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second*await.Slow) // bounds a hang
				resp, err := c.tr.SendRequest(ctx, mcptransport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(c.nextID.Add(1)),
					Method: "tools/call", Params: map[string]any{"name": "r__hello", "arguments": map[string]any{}}})
				cancel()
				switch {
				case err != nil:
				case resp.Error != nil:
					err = fmt.Errorf("error %d %s", resp.Error.Code, resp.Error.Message)
				case !strings.Contains(string(resp.Result), "hello, signed-in hub") || strings.Contains(string(resp.Result), `"isError":true`):
					err = fmt.Errorf("result %s", resp.Result)
				}
				if err != nil {
					tallies[i].failed++
					if tallies[i].first == "" {
						tallies[i].first = err.Error()
					}
					continue
				}
				tallies[i].answered++
			}
		})
	}
	wg.Wait()
	a.Lock()
	revoked, refreshed := a.Revoked, a.Refreshed
	a.Unlock()
	if revoked {
		t.Error("the authorization server revoked the grant: a refresh token was used twice")
	}
	for i, tl := range tallies {
		if tl.failed > 0 || tl.answered == 0 {
			t.Errorf("client %d: %d calls answered, %d failed (first: %s)", i, tl.answered, tl.failed, tl.first)
		}
	}
	if refreshed < int(runFor/(2*time.Second)) {
		t.Errorf("%d renewals in %s of 2 s tokens", refreshed, runFor)
	}
	t.Logf("calls answered per client: %+v; %d renewals", tallies, refreshed)
}
