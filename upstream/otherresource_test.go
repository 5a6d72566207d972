package upstream

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// Sign-ins on file made for another server's resource (by an earlier
// version, see auth.NewSource), the hub's own and each user's, are not
// used, and the log says why in one line for the server's own and one
// for each user's, naming the user: not one per connection, nor per
// call.
func TestSignInForAnotherResourceLoggedOnce(t *testing.T) {
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(make([]byte, vault.KeySize)))
	mcpSrv := mcpserver.NewMCPServer("open", "1")
	mcpSrv.AddTool(mcp.NewTool("echo"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	srv := httptest.NewServer(mcpserver.NewStreamableHTTPServer(mcpSrv))
	t.Cleanup(srv.Close)
	cfg, err := config.Parse("test.yaml", strings.NewReader(fmt.Sprintf("state_dir: %q\naudit: {path: \"off\"}\ngroups:\n  g:\n    description: remote\n    url: %q\n    auth: per-user\n",
		t.TempDir(), srv.URL+"/mcp")))
	if err != nil {
		t.Fatal(err)
	}
	const other = "https://other.example/mcp"
	store := auth.NewStore(cfg.TokenDir())
	for _, s := range []*auth.Store{store, store.ForUser("alice"), store.ForUser("bob")} {
		if err := s.Save(&auth.Record{Server: "g", URL: srv.URL + "/mcp", Resource: other, AccessToken: "other-token", TokenType: "Bearer"}); err != nil {
			t.Fatal(err)
		}
	}
	logs := &recorded{}
	m := New(cfg, slog.New(logs))
	m.SetClientCapabilities(mcp.ClientCapabilities{})
	m.Start(context.Background())
	t.Cleanup(func() { m.Close() })
	s := m.Servers()[0]
	await.For(t, 10*time.Second, "the shared connection", func() bool { return s.Status().State == StateReady })
	for _, owner := range []Owner{alice{}, alice{}, bob{}} {
		if _, err := s.Request(t.Context(), owner, "tools/list", nil, time.Minute); err != nil {
			t.Fatalf("%s's call: %v", owner.UserKey(), err)
		}
	}
	const why = "a sign-in on file is not used"
	logs.mu.Lock()
	defer logs.mu.Unlock()
	var lines []string
	for _, rec := range logs.recs {
		if strings.Contains(rec.Message, why) {
			text := rec.Message
			rec.Attrs(func(a slog.Attr) bool { text += " " + a.Value.String(); return true })
			lines = append(lines, text)
		}
	}
	users := map[string]int{}
	for _, l := range lines {
		user := "the hub's"
		for _, u := range []string{"alice", "bob"} {
			if strings.Contains(l, " "+u+" ") {
				user = u
			}
		}
		if users[user]++; !strings.Contains(l, other) {
			t.Errorf("%s line does not name %s: %s", user, other, l)
		}
	}
	if len(lines) != 3 || users["the hub's"] != 1 || users["alice"] != 1 || users["bob"] != 1 {
		t.Errorf("lines saying why the sign-in is not used: %q; want one for the hub's, alice's and bob's", lines)
	}
}

// The users whose ignored sign-in a server logged are bounded: one beyond
// maxIgnoredUsers is not logged (nor kept), the hub's own still is.
func TestSignInIgnoredUsersBounded(t *testing.T) {
	cfg, err := config.Parse("test.yaml", strings.NewReader(fmt.Sprintf("state_dir: %q\naudit: {path: \"off\"}\ngroups:\n  g:\n    description: remote\n    url: https://example.com/mcp\n    auth: per-user\n", t.TempDir())))
	if err != nil {
		t.Fatal(err)
	}
	logs := &recorded{}
	m := New(cfg, slog.New(logs))
	defer m.Close()
	s := m.Servers()[0]
	for i := range maxIgnoredUsers + 5 {
		s.signInIgnored(userConn(fmt.Sprint("user", i)))(auth.ErrOtherResource)
		s.signInIgnored(userConn(fmt.Sprint("user", i)))(auth.ErrOtherResource)
	}
	s.signInIgnored("")(auth.ErrOtherResource)
	logs.mu.Lock()
	n := len(logs.recs)
	logs.mu.Unlock()
	if n != maxIgnoredUsers+1 || len(s.ignored) != maxIgnoredUsers+1 {
		t.Errorf("%d users' sign-ins ignored, twice each, then the hub's: %d lines, %d kept; want %d", maxIgnoredUsers+5, n, len(s.ignored), maxIgnoredUsers+1)
	}
}

// bob is an owner whose requests are the user bob's.
type bob struct{ testOwner }

func (bob) UserKey() string { return "bob" }
