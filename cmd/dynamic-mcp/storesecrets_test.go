package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// With store:, `secret set|list|rm` write and read the store, not the
// state directory (which gets no secrets file); the config reads the
// store's value; a secret store: itself uses stays in the state
// directory; under another DYNAMIC_MCP_VAULT_KEY the command fails naming
// the key's source.
func TestSecretCommandWithStore(t *testing.T) {
	url := pgtest.Start(t)
	state := t.TempDir()
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{8}, vault.KeySize)))
	t.Setenv("TEAM_DB_HOST", strings.TrimPrefix(url, "postgres://"))
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	src := fmt.Sprintf("state_dir: %s\nstore: postgres://${secret:DB_ADDR}\ngroups:\n  a: {description: x, command: srv, env: {KEY: \"${secret:API_KEY}\"}}\n", state)
	if err := os.WriteFile(cfg, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	run1 := func(stdin string, args ...string) (string, error) {
		var out, errb bytes.Buffer
		err := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
		return out.String() + errb.String(), err
	}
	// store:'s own secret: kept in the state directory.
	if out, err := run1(strings.TrimPrefix(url, "postgres://")+"\n", "secret", "set", "DB_ADDR", "-c", cfg); err != nil || strings.Contains(out, "in the store") {
		t.Fatalf("secret set DB_ADDR: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(state, vault.SecretsFile)); err != nil {
		t.Fatalf("store:'s secret is not in the state directory: %v", err)
	}
	before, _ := os.ReadFile(filepath.Join(state, vault.SecretsFile))
	if out, err := run1("sk-team-secret-1\n", "secret", "set", "API_KEY", "-c", cfg); err != nil || !strings.Contains(out, "secret API_KEY set in the store") {
		t.Fatalf("secret set: %v\n%s", err, out)
	}
	if after, _ := os.ReadFile(filepath.Join(state, vault.SecretsFile)); !bytes.Equal(before, after) {
		t.Error("secret set with a store wrote the state directory's secrets")
	}
	out, err := run1("", "secret", "list", "-c", cfg)
	if err != nil || !strings.Contains(out, "API_KEY\tused at groups.a.env.KEY") || !strings.Contains(out, "DB_ADDR\tkept in the state directory") || strings.Contains(out, "sk-team-secret-1") {
		t.Fatalf("secret list: %v\n%s", err, out)
	}
	c, err := configs.Load(cfg)
	if err != nil || c.Groups[0].Servers[0].Env["KEY"] != "sk-team-secret-1" {
		t.Fatalf("Load: %v", err)
	}
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, vault.KeySize)))
	if out, err := run1("", "secret", "list", "-c", cfg); err == nil || !strings.Contains(out+err.Error(), "the "+vault.EnvKey+" environment variable") {
		t.Fatalf("secret list under another key: %v\n%s", err, out)
	}
	t.Setenv(vault.EnvKey, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{8}, vault.KeySize)))
	if out, err := run1("", "secret", "rm", "API_KEY", "-c", cfg); err != nil || !strings.Contains(out, "secret API_KEY removed in the store") {
		t.Fatalf("secret rm: %v\n%s", err, out)
	}
	if err := loadProblem(cfg); err == nil || !strings.Contains(err.Error(), "secret API_KEY is not set") {
		t.Fatalf("Load after rm: %v", err)
	}
}

// keyedUpstream is an MCP server over Streamable HTTP with one tool
// (hello) that answers only requests whose X-Api-Key is *want.
func keyedUpstream(t *testing.T, want *atomic.Value) *httptest.Server {
	s := mcpserver.NewMCPServer("keyed", "1")
	s.AddTool(mcp.NewTool("hello", mcp.WithDescription("says hello")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("hello, keyed hub"), nil
	})
	h := mcpserver.NewStreamableHTTPServer(s)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != want.Load().(string) {
			http.Error(w, "wrong key", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A replica serving with store: uses the store's secret; `secret set`
// elsewhere (another machine: its own state directory) changes it, and
// the replica, told through the store, reloads and calls with the new
// value, its config file untouched.
func TestServeReloadsASecretChangedInTheStore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for seconds")
	}
	url := pgtest.Start(t)
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, vault.KeySize))
	t.Setenv(vault.EnvKey, key)
	var want atomic.Value
	want.Store("key-one-1111")
	up := keyedUpstream(t, &want)
	src := "store: ${TEAM_DB}\nmode: flat\ngroups:\n  k:\n    description: keyed\n    url: " + up.URL + "/mcp\n    transport: streamable-http\n" +
		"    headers: { X-Api-Key: \"${secret:UP_KEY}\" }\n    retry: { initial_interval: 100ms, reconnect_interval: 200ms }\n"
	admin := filepath.Join(t.TempDir(), "admin.yaml")
	os.WriteFile(admin, []byte(src), 0o600)
	t.Setenv("TEAM_DB", url)
	t.Setenv("DYNAMIC_MCP_HOME", t.TempDir())
	set := func(v string) {
		var out bytes.Buffer
		if err := run(context.Background(), []string{"secret", "set", "UP_KEY", "-c", admin}, strings.NewReader(v+"\n"), &out, &out); err != nil {
			t.Fatalf("secret set: %v\n%s", err, out.String())
		}
	}
	set("key-one-1111")
	replica := filepath.Join(t.TempDir(), "hub.yaml")
	os.WriteFile(replica, []byte(src), 0o600)
	c := startProcess(t, []string{"DYNAMIC_MCP_HOME=" + t.TempDir(), "TEAM_DB=" + url, vault.EnvKey + "=" + key}, hubBin, "serve", "--standalone", "-c", replica)
	c.initialize("2025-06-18")
	await.Costly(t, 10*time.Second, "the keyed tool", func() bool { return strings.Contains(string(c.call("tools/list", nil)), "k__hello") })
	if text, isErr := c.callText("k__hello", nil); isErr || text != "hello, keyed hub" {
		t.Fatalf("call with the first key: %q", text)
	}
	// The replica reads the store's secrets again once it first listens
	// (a change made before that would be missed otherwise): wait for that
	// reload, so that the change below is heard as one, not read by it.
	await.Costly(t, time.Minute, "the replica's read of the store's secrets once listening", func() bool {
		return strings.Contains(c.stderr.String(), "read again once their changes are heard")
	})
	want.Store("key-two-2222")
	set("key-two-2222")
	await.Costly(t, 15*time.Second, "a call with the new key", func() bool {
		res, rpcErr := c.request("tools/call", map[string]any{"name": "k__hello", "arguments": map[string]any{}})
		return rpcErr == nil && strings.Contains(string(res), "hello, keyed hub") && !strings.Contains(string(res), `"isError":true`)
	})
	if !strings.Contains(c.stderr.String(), "a secret changed in the store") {
		t.Errorf("the replica did not say why it reloaded:\n%s", c.stderr.String())
	}
}

// heardTwice is a store whose Watch starts listening (fn once) and then
// hears one notification.
type heardTwice struct{}

func (heardTwice) Notify(context.Context, string) error { return nil }
func (heardTwice) Watch(_ context.Context, _ string, fn func()) {
	fn()
	fn()
}

// Once the secrets' watch first listens, a secret set since the config was
// read at start is read, by a reload that says so: only when the config
// uses one of the store's secrets (a secret only store: uses stays in the
// state directory); each notification after reloads.
func TestWatchSharedSecretsReadsAgainOnceListening(t *testing.T) {
	const resync, changed = "the store's secrets, read again once their changes are heard", "a secret changed in the store"
	for _, tc := range []struct {
		uses map[string][]string
		want []string
	}{
		{nil, []string{changed}},
		{map[string][]string{"DB_PASSWORD": {"store"}}, []string{changed}},
		{map[string][]string{"UP_KEY": {"groups.k.headers.X-Api-Key"}}, []string{resync, changed}},
	} {
		reasons := make(chan string, 2)
		watchSharedSecrets(t.Context(), heardTwice{}, tc.uses, reasons)
		close(reasons)
		var got []string
		for r := range reasons {
			got = append(got, r)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("uses %v: reloads %q, want %q", tc.uses, got, tc.want)
		}
	}
}
