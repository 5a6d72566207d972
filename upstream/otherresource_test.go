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
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// Sign-ins on file made for another server's resource (by an earlier
// version, see auth.NewSource), the hub's own and each user's, are not
// used, and the log says why in one line for the server: not one per
// connection, nor per call.
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
	waitFor(t, 10*time.Second, "the shared connection", func() bool { return s.Status().State == StateReady })
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
	if len(lines) != 1 || !strings.Contains(lines[0], other) {
		t.Errorf("lines saying why the sign-in is not used: %q; want one, naming %s", lines, other)
	}
}

// bob is an owner whose requests are the user bob's.
type bob struct{ testOwner }

func (bob) UserKey() string { return "bob" }
