package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// TestLogFormat starts serve --http with each --log-format (and with
// $DYNAMIC_MCP_LOG_FORMAT, the flag's default) and reads its first log
// line on stderr, a pipe as in a container: JSON for json and for auto
// off a terminal, slog's key=value for text; a bad value is a usage
// error.
func TestLogFormat(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, "groups:\n  f: { description: fake, command: %q }\n", fakeBin), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  string   // $DYNAMIC_MCP_LOG_FORMAT
		args []string // more arguments of serve
		json bool
	}{
		{"auto by default", "", nil, true},
		{"flag json", logFormatText, []string{"--log-format", "json"}, true},
		{"flag text", "", []string{"--log-format", "text"}, false},
		{"flag auto", logFormatText, []string{"--log-format", "auto"}, true},
		{"env json", "json", nil, true},
		{"env text", "text", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stderr := &lockedBuffer{}
			cmd := exec.Command(hubBin, append([]string{"serve", "-c", path, "--http", "127.0.0.1:0"}, tc.args...)...)
			cmd.Env = append(os.Environ(), "DYNAMIC_MCP_TOKEN="+testToken, "DYNAMIC_MCP_HOME="+t.TempDir(), logFormatEnvVar+"="+tc.env)
			cmd.Stderr = stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				cmd.Process.Signal(os.Interrupt)
				cmd.Wait()
			}()
			var line string
			await.Costly(t, 10*time.Second, "the hub to log that it serves", func() bool {
				for l := range strings.SplitSeq(stderr.String(), "\n") {
					if strings.Contains(l, "serving over HTTP") {
						line = l
						return true
					}
				}
				return false
			})
			var rec struct {
				Level, Msg, Addr string
			}
			err := json.Unmarshal([]byte(line), &rec)
			switch {
			case tc.json && (err != nil || rec.Level != "INFO" || rec.Msg != "serving over HTTP" || !strings.HasPrefix(rec.Addr, "127.0.0.1:")):
				t.Errorf("want a JSON line with level, msg and addr, got %q (%v)", line, err)
			case !tc.json && (err == nil || !strings.Contains(line, `level=INFO msg="serving over HTTP" addr=127.0.0.1:`)):
				t.Errorf("want slog's text, got %q", line)
			}
		})
	}
	t.Run("bad", func(t *testing.T) {
		t.Parallel()
		cmd := exec.Command(hubBin, "serve", "-c", path, "--http", "127.0.0.1:0", "--log-format", "xml")
		cmd.Env = append(os.Environ(), "DYNAMIC_MCP_TOKEN="+testToken, "DYNAMIC_MCP_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), `bad --log-format "xml": use json, text or auto`) {
			t.Errorf("exit %d (%v), want 2 and the reason: %s", code, err, out)
		}
	})
}
