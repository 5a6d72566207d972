package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// serve that cannot read its config answers the client's initialize with
// the reason, as a JSON-RPC error, instead of leaving it unanswered, and
// exits 1 with the reason on stderr as before.
func TestServeAnswersInitializeWithConfigError(t *testing.T) {
	home := t.TempDir()
	withHome(t, home)
	wd := t.TempDir()
	t.Chdir(wd)
	const initialize = `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}` + "\n"
	good := filepath.Join(wd, "good.yaml")
	if err := os.WriteFile(good, []byte("groups:\n  g:\n    description: d\n    command: "+fakeBin+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
		more             []string
		exit             int
	}{
		{"relative", "pol.yaml", "open pol.yaml (relative to the working directory " + wd + ", which the client chose): no such file; give the config's absolute path in the client's entry", nil, 1},
		{"home", "~/pol.yaml", "open " + filepath.Join(home, "pol.yaml") + ": no such file or directory", nil, 1},
		// An error after the config was read, before anything is served.
		{"profile", good, `profile "nope": the config has no profiles`, []string{"--profile", "nope", "--standalone"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runCommand(t, initialize, append([]string{"serve", "-c", tc.path}, tc.more...)...)
			var reply struct {
				ID    int `json:"id"`
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(stdout), &reply); err != nil || reply.ID != 7 || reply.Error.Code == 0 || !strings.Contains(reply.Error.Message, tc.want) {
				t.Errorf("the client got %q (%v), want an error answer to id 7 saying %q", stdout, err, tc.want)
			}
			if code != tc.exit || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q", code, stderr)
			}
		})
	}
}

// serve failing before it serves waits for the client's first request
// up to refuseWait, but a stop (SIGTERM, Ctrl-C) ends the wait at once: a
// client that holds stdin open and sends nothing does not hold the stop
// up. In a bubble, the time that passes is the time refuseClient waited.
func TestRefuseClientEndsOnSignal(t *testing.T) {
	reason := errors.New("no config")
	for _, tc := range []struct {
		name   string
		signal bool
		want   time.Duration
	}{
		{"signal", true, 0},
		{"silent client", false, refuseWait},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, stop := context.WithCancelCause(t.Context())
				defer stop(nil)
				if tc.signal {
					stop(stopSignal{syscall.SIGTERM})
				}
				stdin, client := io.Pipe() // held open, nothing sent
				var stdout strings.Builder
				start := time.Now()
				if err := refuseClient(ctx, stdin, &stdout, reason, true); err != reason {
					t.Errorf("refuseClient: %v, want %v", err, reason)
				}
				if waited := time.Since(start); waited != tc.want {
					t.Errorf("refuseClient waited %v, want %v", waited, tc.want)
				}
				if stdout.Len() != 0 {
					t.Errorf("the client got %q, having asked nothing", stdout.String())
				}
				client.Close() // ends the read refuseClient left to the exit
			})
		})
	}
}
