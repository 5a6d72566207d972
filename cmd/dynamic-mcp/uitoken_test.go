package main

import (
	"bufio"
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

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// uiTokenHub starts serve --http with env added, stderr into the
// returned buffer, and returns the face's base URL, its stderr and its
// state dir; it is stopped when the test ends.
func uiTokenHub(t *testing.T, stderrFile *os.File, env ...string) (base string, stderr *lockedBuffer, home, path string) {
	t.Helper()
	path = writeConfig(t, fmt.Sprintf("mode: flat\ngroups:\n  f: { description: fake, command: %q }\n", fakeBin))
	home = t.TempDir()
	stderr = &lockedBuffer{}
	cmd := exec.Command(hubBin, "serve", "-c", path, "--http", "127.0.0.1:0", "--log-level", "info")
	cmd.Env = append(append(os.Environ(), "DYNAMIC_MCP_TOKEN="+testToken, "DYNAMIC_MCP_HOME="+home), env...)
	cmd.Stderr = stderr
	if stderrFile != nil {
		cmd.Stderr = stderrFile
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("stderr of the hub:\n%s", stderr)
		}
	})
	if stderrFile != nil {
		return "", stderr, home, path
	}
	addr := regexp.MustCompile(`"addr":"([^"]+)"|serving over HTTP" addr=(\S+)`)
	await.Costly(t, 10*time.Second, "the hub to listen", func() bool {
		if m := addr.FindStringSubmatch(stderr.String()); m != nil {
			base = "http://" + m[1] + m[2]
			return true
		}
		return false
	})
	return base, stderr, home, path
}

// initializeStatus is the status of an initialize POSTed to base's /mcp
// with token, and X-Forwarded-For forwarded unless it is empty.
func initializeStatus(t *testing.T, base, token, forwarded string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	if forwarded != "" {
		req.Header.Set("X-Forwarded-For", forwarded)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	return statusOf(t, req)
}

// statusOf is the status of req, its body read and closed.
func statusOf(t *testing.T, req *http.Request) int {
	t.Helper()
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// uiStatus is the status of GET /ui/api/clients with token.
func uiStatus(t *testing.T, base, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/ui/api/clients", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	return statusOf(t, req)
}

// In a container (stderr no terminal, --log-format json as the image
// sets it) serve --http never puts the inspector's token on stderr: every
// line is JSON, one record names the page and the file under the state
// dir that holds the token (0600), and that token opens the inspector.
// $DYNAMIC_MCP_UI_TOKEN sets the token instead (the same on every
// replica): no file, nothing printed; one too short, or an MCP token, is
// refused at start. On a terminal the token is printed, as before. A
// generated MCP token (none configured) is kept off the logs the same way.
func TestInspectorTokenOffTheLogs(t *testing.T) {
	t.Parallel()
	t.Run("file", func(t *testing.T) {
		base, stderr, home, _ := uiTokenHub(t, nil, logFormatEnvVar+"=json")
		var rec struct{ Msg, URL, File string }
		await.Costly(t, 10*time.Second, "the record of the inspector's token file", func() bool {
			for _, l := range strings.Split(stderr.String(), "\n") {
				if json.Unmarshal([]byte(l), &rec) == nil && strings.Contains(rec.Msg, "token for this run is in the file") {
					return true
				}
			}
			return false
		})
		if rec.URL != base+"/ui/" || rec.File != filepath.Join(home, "inspector-token") {
			t.Errorf("the record: %+v", rec)
		}
		fi, err := os.Stat(rec.File)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", rec.File, fi, err)
		}
		b, _ := os.ReadFile(rec.File)
		token := strings.TrimSpace(string(b))
		if code := uiStatus(t, base, token); code != http.StatusOK {
			t.Errorf("the inspector with the file's token: %d", code)
		}
		if code := uiStatus(t, base, testToken); code != http.StatusUnauthorized {
			t.Errorf("the inspector with the MCP token: %d", code)
		}
		for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
			if !json.Valid([]byte(l)) {
				t.Errorf("a line on stderr that is not JSON: %s", l)
			}
		}
		if strings.Contains(stderr.String(), token) {
			t.Error("the inspector's token is on stderr")
		}
	})
	t.Run("generated MCP token", func(t *testing.T) {
		base, stderr, home, _ := uiTokenHub(t, nil, logFormatEnvVar+"=json", "DYNAMIC_MCP_TOKEN=")
		path := filepath.Join(home, "http-token")
		await.Costly(t, 10*time.Second, "the record of the MCP token's file", func() bool {
			return strings.Contains(stderr.String(), `"file":"`+path+`"`) && strings.Contains(stderr.String(), "clients must send the one in the file")
		})
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", path, fi, err)
		}
		b, _ := os.ReadFile(path)
		token := strings.TrimSpace(string(b))
		if strings.Contains(stderr.String(), token) || strings.Contains(stderr.String(), "Authorization: Bearer") {
			t.Error("the generated MCP token is on stderr")
		}
		post := func(token string) int { return initializeStatus(t, base, token, "") }
		if code := post(token); code != http.StatusOK {
			t.Errorf("initialize with the file's token: %d", code)
		}
		if code := post(testToken); code != http.StatusUnauthorized {
			t.Errorf("initialize with another token: %d", code)
		}
	})
	t.Run("environment", func(t *testing.T) {
		const token = "team-inspector-token-0123456789"
		base, stderr, home, _ := uiTokenHub(t, nil, uiTokenEnvVar+"="+token)
		await.Costly(t, 10*time.Second, "the inspector's record", func() bool {
			return strings.Contains(stderr.String(), "its token is $"+uiTokenEnvVar+`" url=`+base+"/ui/")
		})
		if code := uiStatus(t, base, token); code != http.StatusOK {
			t.Errorf("the inspector with $%s: %d", uiTokenEnvVar, code)
		}
		if _, err := os.Stat(filepath.Join(home, "inspector-token")); !os.IsNotExist(err) {
			t.Errorf("a token file with $%s set: %v", uiTokenEnvVar, err)
		}
		if strings.Contains(stderr.String(), token) {
			t.Error("the inspector's token is on stderr")
		}
	})
	t.Run("refused", func(t *testing.T) {
		for _, v := range []string{"short", testToken} {
			path := writeConfig(t, fmt.Sprintf("groups:\n  f: { description: fake, command: %q }\n", fakeBin))
			cmd := exec.Command(hubBin, "serve", "-c", path, "--http", "127.0.0.1:0")
			cmd.Env = append(os.Environ(), "DYNAMIC_MCP_TOKEN="+testToken, "DYNAMIC_MCP_HOME="+t.TempDir(), uiTokenEnvVar+"="+v)
			out, err := cmd.CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "$"+uiTokenEnvVar) {
				t.Errorf("$%s=%s: %v\n%s", uiTokenEnvVar, v, err, out)
			}
		}
	})
	t.Run("terminal", func(t *testing.T) {
		ptm, pts := openPTY(t)
		uiTokenHub(t, pts)
		pts.Close()
		lines := make(chan string, 64)
		read := make(chan struct{})
		go func() { // ends when ptm is closed, below
			defer close(read)
			sc := bufio.NewScanner(ptm)
			for sc.Scan() {
				select {
				case lines <- sc.Text():
				default:
				}
			}
			close(lines)
		}()
		t.Cleanup(func() { ptm.Close(); <-read })
		deadline := time.After(10 * time.Second * await.Slow)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("the terminal closed before the token was printed")
				}
				if _, tok, ok := strings.Cut(l, "token for this run: "); ok && len(strings.TrimSpace(tok)) >= 32 {
					return
				}
			case <-deadline:
				t.Fatal("no token printed on the terminal")
			}
		}
	})
}
