package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
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

// serve --http with stderr not a terminal writes the token to a file:
// the login page says so (where the file is, not the token, and not "on
// stderr"), and `dynamic-mcp ui` prints the token from it.
func TestHTTPUITokenHintAndUICommand(t *testing.T) {
	t.Parallel()
	base, _, home, path := uiTokenHub(t, nil, logFormatEnvVar+"=json")
	file := filepath.Join(home, uiTokenFile)
	await.Costly(t, 10*time.Second, "the token's file", func() bool { _, err := os.Stat(file); return err == nil })
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
