package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A reload that changes http.auth is noticed (the hub warns that a
// restart is needed); one that only moves it in the file is not.
func TestHTTPAuthChanged(t *testing.T) {
	parse := func(doc string) *config.HTTPAuth {
		cfg, err := config.Parse("c.yaml", strings.NewReader(doc+"profiles:\n  a: { groups: [g] }\ngroups:\n  g: { description: d, command: echo }\n"))
		if err != nil {
			t.Fatal(err)
		}
		return cfg.HTTP.Auth
	}
	const auth = "http:\n  auth:\n    issuer: https://id.example/\n    audience: https://hub.example/mcp\n    profiles: [{ claim: groups, value: x, profile: a }]\n    introspection: { cache_ttl: 5s }\n"
	base := parse(auth)
	if httpAuthChanged(base, parse("# moved\n\n"+auth)) {
		t.Error("moved in the file: changed")
	}
	for name, doc := range map[string]string{
		"issuer":   strings.Replace(auth, "id.example", "id2.example", 1),
		"profiles": strings.Replace(auth, "value: x", "value: y", 1),
		"ttl":      strings.Replace(auth, "5s", "6s", 1),
		"removed":  "",
	} {
		if !httpAuthChanged(base, parse(doc)) {
			t.Errorf("%s changed: not noticed", name)
		}
	}
}

// A reload that changes http.auth keeps serving the http.auth the hub
// started with (its metadata names the first issuer) and says, once per
// reload, that a restart is needed.
func TestReloadOfHTTPAuthWarns(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	conf := func(issuer string) []byte {
		return []byte(fmt.Sprintf("http:\n  auth: { issuer: %q, audience: \"https://hub.example/mcp\" }\ngroups:\n  f: { description: fake, command: %q }\n", issuer, fakeBin))
	}
	if err := os.WriteFile(path, conf("https://id.example/"), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	cmd := exec.Command(hubBin, "serve", "-c", path, "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "DYNAMIC_MCP_TOKEN="+testToken, "DYNAMIC_MCP_HOME="+t.TempDir())
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("stderr of the hub:\n%s", stderr.String())
		}
	})
	base := "http://" + servingAddr(t, "the hub", stderr)
	if err := os.WriteFile(path, conf("https://id2.example/"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	await.Costly(t, 10*time.Second, "the reload's warning", func() bool {
		return strings.Contains(stderr.String(), "http.auth changed; it is read at start, restart to use the new one")
	})
	var m struct {
		Servers []string `json:"authorization_servers"`
	}
	getJSON(t, base+"/.well-known/oauth-protected-resource/mcp", &m)
	if len(m.Servers) != 1 || m.Servers[0] != "https://id.example/" {
		t.Errorf("after the reload the metadata names %v, want the issuer the hub started with", m.Servers)
	}
}
