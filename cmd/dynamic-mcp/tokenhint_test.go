package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// tokenHint is what the inspector's login dialog says of where its token
// is (GET /ui/token-hint, which needs no token).
func tokenHint(t *testing.T, page string) string {
	t.Helper()
	resp, err := testClient.Get(page + "token-hint")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("token-hint: %d %s", resp.StatusCode, b)
	}
	return string(b)
}

// uiCommand runs `dynamic-mcp ui` with env added.
func uiCommand(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(hubBin, append([]string{"ui"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

var printedUI = regexp.MustCompile(`the inspector is at (http://127\.0\.0\.1:\d+/ui/)\n  token for this run: (\S+)\n`)

// The shared hub's inspector, asked for by a client entry's --ui: the
// token went to that client's MCP log, so the login page says to run
// `dynamic-mcp ui`, which prints the URL and the token, the ones the
// bridge printed. A hub serving none is told to by `ui --addr`.
func TestSharedHubUITokenHintAndUICommand(t *testing.T) {
	t.Parallel()
	s := newShared(t, fmt.Sprintf("settings: { shared_idle: 1m, stop_grace: 1s }\ngroups:\n  one: %s\n", fakeGroup()))
	s.bridge(t, "alpha")
	out, err := uiCommand(t, s.env, "-c", s.path)
	if err == nil || !strings.Contains(out, "serves no inspector") || !strings.Contains(out, "dynamic-mcp ui -c "+s.path+" --addr 7777") {
		t.Errorf("ui with no inspector: %v\n%s", err, out)
	}
	out, err = uiCommand(t, s.env, "-c", s.path, "--addr", "127.0.0.1:0")
	m := printedUI.FindStringSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("ui --addr: %v\n%s", err, out)
	}
	if code := uiStatus(t, strings.TrimSuffix(m[1], "/ui/"), m[2]); code != http.StatusOK {
		t.Errorf("the inspector with the token ui printed: %d", code)
	}
	// ui again prints the same; the login page says to run it.
	page, token := m[1], m[2]
	out, err = uiCommand(t, s.env, "-c", s.path)
	if err != nil || !strings.Contains(out, page) || !strings.Contains(out, token) {
		t.Errorf("ui: %v\n%s\nwant %s %s", err, out, page, token)
	}
	hint := tokenHint(t, page)
	if !strings.Contains(hint, "dynamic-mcp ui -c "+s.path) || strings.Contains(hint, token) {
		t.Errorf("the login page says: %q", hint)
	}
}

// A client entry's --ui: the bridge prints the token into the client's
// MCP log, and `dynamic-mcp ui` prints the same URL and token.
func TestSharedHubUICommandPrintsTheBridgesToken(t *testing.T) {
	t.Parallel()
	s := newShared(t, fmt.Sprintf("settings: { shared_idle: 1m, stop_grace: 1s }\ngroups:\n  one: %s\n", fakeGroup()))
	_, page, token := s.uiBridge(t, "alpha", "127.0.0.1:0")
	out, err := uiCommand(t, s.env, "-c", s.path)
	if m := printedUI.FindStringSubmatch(out); err != nil || m == nil || m[1] != page || m[2] != token {
		t.Errorf("ui: %v\n%s\nwant %s %s", err, out, page, token)
	}
}

// serve --http with stderr not a terminal writes the token to a file:
// the login page says so (where the file is, not the token, and not "on
// stderr"), and `dynamic-mcp ui` prints the token from it.
func TestHTTPUITokenHintAndUICommand(t *testing.T) {
	t.Parallel()
	base, _, home, path := uiTokenHub(t, nil, logFormatEnvVar+"=json")
	file := filepath.Join(home, uiTokenFile)
	waitFor(t, 10*time.Second, "the token's file", func() bool { _, err := os.Stat(file); return err == nil })
	b, _ := os.ReadFile(file)
	token := strings.TrimSpace(string(b))
	hint := tokenHint(t, base+"/ui/")
	if !strings.Contains(hint, "in the file "+uiTokenFile+" in the hub's state directory") || strings.Contains(hint, "stderr") || strings.Contains(hint, token) {
		t.Errorf("the login page says: %q", hint)
	}
	out, err := uiCommand(t, []string{"DYNAMIC_MCP_HOME=" + home}, "-c", path)
	if err != nil || !strings.Contains(out, "token for its last run: "+token) {
		t.Errorf("ui: %v\n%s", err, out)
	}
	// Another config of the same state dir is not given this one's token.
	other := writeConfig(t, fmt.Sprintf("groups:\n  f: { description: fake, command: %q }\n", fakeBin))
	if out, err := uiCommand(t, []string{"DYNAMIC_MCP_HOME=" + home}, "-c", other); err == nil || strings.Contains(out, token) || !strings.Contains(out, "start a client whose entry has --ui 7777") {
		t.Errorf("ui of another config: %v\n%s", err, out)
	}
}

// dynamic-mcp ui prints serve --http's token only while the run that
// wrote it runs, for its config; a file with no owner beside it (written
// by an older build) as before.
func TestHTTPUITokenOfThisRunOnly(t *testing.T) {
	withHome(t, t.TempDir())
	path := writeConfig(t, fmt.Sprintf("groups:\n  f: { description: fake, command: %q }\n", fakeBin))
	other := writeConfig(t, fmt.Sprintf("groups:\n  g: { description: fake, command: %q }\n", fakeBin))
	file := filepath.Join(os.Getenv("DYNAMIC_MCP_HOME"), uiTokenFile)
	if err := writeSecretFile(file, []byte("tok-0123456789abcdef\n")); err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		owner string // "" for none
		shown bool
	}{
		{"an old file", "", true},
		{"this config, running", fmt.Sprintf(`{"config":%q,"pid":%d}`, resolvedPath(path), os.Getpid()), true},
		{"another config", fmt.Sprintf(`{"config":%q,"pid":%d}`, resolvedPath(other), os.Getpid()), false},
		{"this config, ended", fmt.Sprintf(`{"config":%q,"pid":%d}`, resolvedPath(path), dead.Process.Pid), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(file + uiOwnerSuffix)
			if tc.owner != "" {
				if err := writeSecretFile(file+uiOwnerSuffix, []byte(tc.owner)); err != nil {
					t.Fatal(err)
				}
			}
			stdout, stderr, code := runCommand(t, "", "ui", "-c", path)
			if shown := strings.Contains(stdout, "token for its last run: tok-0123456789abcdef"); shown != tc.shown || (code == 0) != tc.shown {
				t.Errorf("exit %d, token shown %v, want %v:\n%s%s", code, shown, tc.shown, stdout, stderr)
			}
			if !tc.shown && !strings.Contains(stderr, "start a client whose entry has --ui 7777") {
				t.Errorf("no way to an inspector said:\n%s", stderr)
			}
		})
	}
}

// The reference filesystem server asks for roots/list as it starts, when
// the shared hub has no client yet: the hub answers for the client, as it
// must, and the inspector shows those rows as no_client, not as red
// errors that a newcomer takes for failures.
func TestInspectorRootsListAtStartIsNoFailure(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := newShared(t, fmt.Sprintf("settings: { shared_idle: 1m, stop_grace: 1s, "+nodeWaits+" }\ngroups:\n  files:\n    description: files\n    command: node\n    args: %s\n",
		yamlList(referenceServer(t, "server-filesystem", root)[1:])))
	_, page, token := s.uiBridge(t, "alpha", "127.0.0.1:0")
	waitFor(t, time.Minute, "the filesystem server", func() bool {
		st := s.status(t)
		return len(st.Upstreams) == 1 && st.Upstreams[0].State == "ready"
	})
	var statuses []string
	waitFor(t, 30*time.Second, "a roots/list row", func() bool {
		req, _ := http.NewRequest(http.MethodGet, page+"api/export", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		statuses = nil
		for line := range strings.Lines(string(b)) {
			var r struct{ Method, Status string }
			if json.Unmarshal([]byte(line), &r) == nil && r.Method == "roots/list" {
				statuses = append(statuses, r.Status)
			}
		}
		return len(statuses) > 0
	})
	for _, st := range statuses {
		if st != "no_client" {
			t.Errorf("roots/list rows: %v, want no_client", statuses)
			break
		}
	}
}
