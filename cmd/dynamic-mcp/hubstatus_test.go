//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// runStatus runs `dynamic-mcp status` as the user would, beside s's hub.
func (s *sharedSetup) runStatus(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(hubBin, "status", "-c", s.path)
	cmd.Env = append(os.Environ(), s.env...)
	out, _ := cmd.Output() // exit 1 while an upstream is not ready
	return string(out)
}

// `dynamic-mcp status` beside a running shared hub asks it: the servers
// as the hub sees them (the tools its client gets, after the deny list;
// a failed one with its reason), a reload the hub refused, and its
// inspector; it starts no server of its own (the fake counts its
// starts). With no hub it says that it checks each server itself.
func TestStatusAsksTheRunningHub(t *testing.T) {
	t.Parallel()
	count := filepath.Join(t.TempDir(), "starts")
	body := fmt.Sprintf("settings: { shared_idle: 1m, stop_grace: 1s }\ngroups:\n"+
		"  one:\n    description: fake\n    command: %q\n    args: [\"-count-file\", %q]\n    deny: [\"^crash$\", \"^hang$\"]\n"+
		"  broken: { description: fails, command: %q, args: [\"-exit-at-start\", \"3\"] }\n", fakeBin, count, fakeBin)
	s := newShared(t, body)
	if out := s.runStatus(t); !strings.HasPrefix(out, "no hub runs for this config: starting each server to check it\n") {
		t.Fatalf("status with no hub:\n%s", out)
	}
	os.Remove(count)
	_, page, _ := s.uiBridge(t, "alpha", "127.0.0.1:0")
	// The hub's first tries settle: one ready, broken failed.
	await.Costly(t, time.Minute, "the hub's upstreams to settle (one ready, broken failed)", func() bool {
		st := s.status(t)
		return len(st.Upstreams) == 2 && st.Upstreams[0].State == "ready" && st.Upstreams[1].State == "failed"
	})
	out := s.runStatus(t)
	if strings.Contains(out, "starting each server") || !strings.HasPrefix(out, "shared hub: pid") || !strings.Contains(out, "alpha 1.0") {
		t.Errorf("status beside a hub:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^one\s+one\s+stdio\s+ready\s+\S+\s+`+strconv.Itoa(fakeTools-2)+`\+2 hidden\s`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^broken\s+broken\s+stdio\s+failed\s+-\s+-\s+-\s+\S`).MatchString(out) {
		t.Errorf("status's table is not the hub's:\n%s", out)
	}
	if !strings.Contains(out, "config: as the hub read it at start") || !strings.Contains(out, "inspector: "+page+" (its token: dynamic-mcp ui -c "+s.path+")") {
		t.Errorf("status does not tell the reload or the inspector:\n%s", out)
	}
	if b, _ := os.ReadFile(count); string(b) != "1" {
		t.Errorf("the fake was started %q times: status started its own", b)
	}

	// A config the hub refuses on reload: status says so, with why.
	cfg, _ := os.ReadFile(s.path)
	if err := os.WriteFile(s.path, []byte(strings.Replace(string(cfg), "description: fake", "descripton: fake", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	await.Costly(t, time.Minute, "the hub to try to reload", func() bool { return s.status(t).Reload != nil })
	out = s.runStatus(t)
	if !strings.Contains(out, "was REFUSED; the hub still serves the config before it") || !strings.Contains(out, "descripton") {
		t.Errorf("status after a refused reload:\n%s", out)
	}
}

// status says where the reasons a server is not ready are when one has a
// reason, and to ask again when each is only still starting.
func TestNotAllReadySaysWhy(t *testing.T) {
	if err := notAllReady(nil, false); err != nil {
		t.Errorf("all ready: %v", err)
	}
	if err := notAllReady([]string{"a starting"}, false); !errors.Is(err, errNotAllReady) || err.Error() != "not every upstream is ready: a starting (no error yet: ask again in a moment)" {
		t.Errorf("only starting: %v", err)
	}
	if err := notAllReady([]string{"a starting", "b failed"}, true); !errors.Is(err, errNotAllReady) || err.Error() != "not every upstream is ready: a starting, b failed (the reasons are above)" {
		t.Errorf("one failed: %v", err)
	}
}
