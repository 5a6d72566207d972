package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
)

// Three replicas of a team's hub (three processes, each with a state
// directory of its own, as on three machines) on one database (store:),
// one sign-in saved there, against an authorization server that rotates
// refresh tokens, lets access tokens lapse in 2 s and revokes the grant
// when a used refresh token comes again: the renewals take turns under
// the database's advisory lock, so each token is renewed once, the grant
// stands and every call is answered. `auth status` of any replica shows
// the sign-in; nothing is written to a replica's state directory.
func TestReplicasShareOneSignInThroughTheStore(t *testing.T) {
	t.Parallel() // the key and the database reach its processes in their environment
	if testing.Short() {
		t.Skip("runs for seconds")
	}
	url := pgtest.Start(t)
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	a := renewingServer(t)
	// The sign-in, as `auth login` on one replica makes it: in the store.
	loginHome := t.TempDir()
	loginCfg := filepath.Join(loginHome, "hub.yaml")
	os.WriteFile(loginCfg, []byte("store: ${TEAM_DB}\n"+protectedConfig(a)), 0o600)
	if out := hydraLogin(t, append(os.Environ(), "DYNAMIC_MCP_HOME="+loginHome, "TEAM_DB="+url, vault.EnvKey+"="+key), loginCfg, "r"); !strings.Contains(out, "signed in") {
		t.Fatalf("auth login: %s", out)
	}
	hubs := make([]*client, 3)
	homes := make([]string, 3)
	for i := range hubs {
		homes[i] = t.TempDir()
		cfg := filepath.Join(homes[i], "hub.yaml")
		os.WriteFile(cfg, []byte("store: ${TEAM_DB}\n"+protectedConfig(a)), 0o600)
		hubs[i] = startProcess(t, []string{"DYNAMIC_MCP_HOME=" + homes[i], "TEAM_DB=" + url, vault.EnvKey + "=" + key}, hubBin, "serve", "--standalone", "-c", cfg)
		hubs[i].initialize("2025-06-18")
	}
	start := time.Now()
	callThroughRenewals(t, a, hubs)
	a.Lock()
	refreshed := a.Refreshed
	a.Unlock()
	// A 2 s token is renewed in the second half of its life: about once a
	// second for the three together (and the wait for the tools), not once
	// per replica.
	if most := int(time.Since(start)/time.Second) + 2; refreshed > most {
		t.Errorf("%d renewals in %s by three replicas: want at most %d", refreshed, time.Since(start).Round(time.Second), most)
	}
	// Where: the socket's directory, the port naming it, the database.
	where, err := pgconn.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if logs := hubs[0].stderr.String(); !strings.Contains(logs, "state shared through the store's database") || !regexp.MustCompile(`(?m)store=`+regexp.QuoteMeta(fmt.Sprintf("%s:%d/%s", where.Host, where.Port, where.Database))+`(\s|$)`).MatchString(logs) {
		t.Errorf("the hub does not say where its state is:\n%s", logs)
	}
	status := exec.Command(hubBin, "auth", "status", "-c", filepath.Join(homes[1], "hub.yaml"))
	status.Env = append(os.Environ(), "DYNAMIC_MCP_HOME="+homes[1], "TEAM_DB="+url, vault.EnvKey+"="+key)
	if out, err := status.CombinedOutput(); err != nil || !strings.Contains(string(out), a.URL) {
		t.Errorf("auth status on another replica: %v\n%s", err, out)
	}
	for _, home := range append(homes, loginHome) {
		if entries, _ := os.ReadDir(filepath.Join(home, "oauth-servers")); len(entries) > 0 {
			t.Errorf("a replica wrote sign-ins to its state directory: %v", entries)
		}
	}
}

// A hub whose store: does not answer fails at start, before serving,
// saying which database; the URL's password is not printed.
func TestServeFailsWhenTheStoreIsDown(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cfg := filepath.Join(home, "hub.yaml")
	os.WriteFile(cfg, []byte("store: postgres://hub:hunter2@127.0.0.1:1/team?connect_timeout=2\ngroups:\n  g: { description: d, command: echo }\n"), 0o600)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hubBin, "serve", "--standalone", "-c", cfg)
	cmd.Env = append(os.Environ(), "DYNAMIC_MCP_HOME="+home)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 ||
		!strings.Contains(string(out), "cannot reach the database at 127.0.0.1:1/team") || strings.Contains(string(out), "hunter2") {
		t.Fatalf("serve with a store that is down: %v\n%s", err, out)
	}
}

// serve --http with a store: and no http.session_keys refuses to start:
// replicas that share state but not sessions would need sticky routing.
func TestServeHTTPWithStoreNeedsSessionKeys(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cfg := filepath.Join(home, "hub.yaml")
	os.WriteFile(cfg, []byte("store: postgres://hub@127.0.0.1:1/team\nhttp: { token: a-token-of-sixteen-bytes }\ngroups:\n  g: { description: d, command: echo }\n"), 0o600)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hubBin, "serve", "--http", "127.0.0.1:0", "-c", cfg)
	cmd.Env = append(os.Environ(), "DYNAMIC_MCP_HOME="+home)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "resume each other's sessions only with http.session_keys") {
		t.Fatalf("serve --http with a store and no session keys: %v\n%s", err, out)
	}
}

// The pool parameters pgxpool honoured and the store ignores are named
// in a warning at open, once; a URL without them warns of nothing.
func TestOpenStoreWarnsOfIgnoredPoolParams(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t)
	for _, c := range []struct{ query, want string }{
		{"&pool_min_conns=2&pool_max_conn_idle_time=5m&pool_max_conns=3", "params=pool_min_conns,pool_max_conn_idle_time"},
		{"&pool_max_conns=3", ""},
	} {
		var logs strings.Builder
		db, err := openStore(t.Context(), &config.Config{Store: url + c.query}, slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		closeStore(db)
		warned := strings.Count(logs.String(), "level=WARN")
		if c.want == "" && warned != 0 || c.want != "" && (warned != 1 || !strings.Contains(logs.String(), c.want)) {
			t.Errorf("%s: %s", c.query, logs.String())
		}
	}
}
