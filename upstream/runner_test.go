package upstream

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A server npx starts gets the longer first connect (2m), and when even
// that runs out (here shortened) the error says the package may still be
// downloading and what to raise; the hub tries again on its own, and the
// try after the download is over connects. The "npx" is a script on PATH
// that answers initialize only once the test releases it (the download).
func TestPackageRunnerFirstStart(t *testing.T) {
	released, cfg := downloadingRunner(t, "")
	sc := cfg.Groups[0].Servers[0]
	if sc.ConnectTimeout != config.DefaultRunnerConnectTimeout || cfg.ConnectTimeoutFor(sc) != 2*time.Minute {
		t.Fatalf("npx's connect timeout = %s, want 2m", cfg.ConnectTimeoutFor(sc))
	}
	sc.ConnectTimeout = 300 * time.Millisecond // a download longer than the bound, without the wait
	m := New(cfg, testLogger(t))
	m.SetClientCapabilities(mcp.ClientCapabilities{})
	m.Start(context.Background())
	defer m.Close()
	s := m.Servers()[0]
	await.For(t, 10*time.Second, "the first start to time out", func() bool { return s.Status().State == StateFailed })
	want := "no answer to initialize within 300ms (connect timeout): npx may still be downloading the package on its first start; " +
		"the hub tries again on its own; the next try gets 600ms to start (to wait longer, raise the server's timeout: or settings.connect_timeout)"
	if err := s.Status().Err; err == nil || err.Error() != want {
		t.Fatalf("error %v\nwant %s", err, want)
	}
	if err := os.WriteFile(released, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	await.For(t, 10*time.Second, "a try after the download to connect", func() bool { return s.Status().State == StateReady })
}

// downloadingRunner is the config of group g, a server npx starts with
// more of its keys (lines indented by four spaces): the "npx" is a
// script on PATH that answers initialize only once the file released
// exists (the download is over).
func downloadingRunner(t *testing.T, more string) (released string, cfg *config.Config) {
	bin := t.TempDir()
	released = filepath.Join(t.TempDir(), "downloaded")
	script := fmt.Sprintf("#!/bin/sh\nexec %q -gate %q\n", fakeBin, released)
	if err := os.WriteFile(filepath.Join(bin, "npx"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	yaml := fmt.Sprintf("state_dir: %q\naudit: {path: \"off\"}\ngroups:\n  g:\n    description: fake\n    command: npx\n    args: [\"-y\", \"@example/server\"]\n    retry: {initial_interval: 50ms}\n%s", t.TempDir(), more)
	cfg, err := config.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return released, cfg
}

// A session's own connection (isolation: per-session) to a package
// runner whose start timed out is dialled again by a call, not by
// the hub on its own: the error says so; the calls before the backoff
// has passed say how long it is; once the download is over, a call
// connects.
func TestPackageRunnerFirstStartPerSession(t *testing.T) {
	released, cfg := downloadingRunner(t, "    isolation: per-session\n")
	cfg.Groups[0].Servers[0].ConnectTimeout = 300 * time.Millisecond
	m := New(cfg, testLogger(t))
	m.SetClientCapabilities(mcp.ClientCapabilities{})
	m.Start(context.Background())
	defer m.Close()
	s := m.Servers()[0]
	// The shared connection (for the lists) is up; the session's own
	// starts the download again.
	if err := os.WriteFile(released, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	await.For(t, 10*time.Second, "the shared connection", func() bool { return s.Status().State == StateReady })
	if err := os.Remove(released); err != nil {
		t.Fatal(err)
	}
	want := "no answer to initialize within 300ms (connect timeout): npx may still be downloading the package on its first start; " +
		"a call after the backoff tries again; the next try gets 600ms to start (to wait longer, raise the server's timeout: or settings.connect_timeout)"
	_, err := s.Request(t.Context(), testOwner("a"), "tools/list", nil, time.Minute)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("the first call: %v\nwant an error with %s", err, want)
	}
	if err := os.WriteFile(released, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	await.For(t, 10*time.Second, "a call after the download to connect", func() bool {
		_, err := s.Request(t.Context(), testOwner("a"), "tools/list", nil, time.Minute)
		// A loaded machine may cut a try off again (it is longer each time).
		if err != nil && !strings.Contains(err.Error(), "at the earliest") && !strings.Contains(err.Error(), "a call after the backoff tries again") {
			t.Fatalf("a later call: %v; want one that says when the next try is", err)
		}
		return err == nil
	})
}

// A user's own connection (auth: per-user) has no backoff: the user's
// next call dials it again, and a package runner's timeout would say so
// (per-user servers are url: ones, which no package runner starts, so
// the failure is noted here by hand).
func TestPackageRunnerTimeoutForUser(t *testing.T) {
	_, cfg := downloadingRunner(t, "")
	cfg.Groups[0].Servers[0].ConnectTimeout = 300 * time.Millisecond
	m := New(cfg, testLogger(t))
	defer m.Close()
	s := m.Servers()[0]
	to := &connectTimeout{cfg: s.Config, within: 300 * time.Millisecond}
	s.mu.Lock()
	s.dialFailedLocked(to, true)
	s.mu.Unlock()
	want := "no answer to initialize within 300ms (connect timeout): npx may still be downloading the package on its first start; " +
		"the user's next call tries again; the next try gets 600ms to start (to wait longer, raise the server's timeout: or settings.connect_timeout)"
	if got := to.Error(); got != want {
		t.Errorf("error %s\nwant %s", got, want)
	}
}

// settings.connect_timeout in the file bounds package runners too, and
// their timeout error names it alone; other commands keep the default.
func TestPackageRunnerConnectTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, settings, server string
		runner                 string
		want                   time.Duration
	}{
		{"npx", "", `command: npx, args: ["-y", "pkg"]`, "npx", 2 * time.Minute},
		{"uvx by path", "", `command: /usr/local/bin/uvx, args: ["pkg"]`, "uvx", 2 * time.Minute},
		{"pipx run", "", `command: pipx, args: ["run", "pkg"]`, "pipx run", 2 * time.Minute},
		{"docker run", "", `command: docker, args: ["run", "-i", "--rm", "img"]`, "docker run", 2 * time.Minute},
		{"pnpm dlx", "", `command: pnpm, args: ["dlx", "pkg"]`, "pnpm dlx", 2 * time.Minute},
		{"a longer timeout:", "", `command: bunx, args: ["pkg"], timeout: 5m`, "bunx", 5 * time.Minute},
		{"settings.connect_timeout", "connect_timeout: 30s", `command: npx, args: ["pkg"]`, "npx", 30 * time.Second},
		{"not a runner", "", `command: node, args: ["server.js"]`, "", 10 * time.Second},
		{"docker, not run", "", `command: docker, args: ["exec", "-i", "c", "srv"]`, "", 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := fmt.Sprintf("settings: {%s}\ngroups:\n  g: {description: x, %s}\n", tc.settings, tc.server)
			cfg, err := config.Parse("", strings.NewReader(yaml))
			if err != nil {
				t.Fatal(err)
			}
			s := cfg.Groups[0].Servers[0]
			if got := cfg.ConnectTimeoutFor(s); got != tc.want || s.PackageRunner() != tc.runner {
				t.Errorf("connect timeout %s, runner %q; want %s, %q", got, s.PackageRunner(), tc.want, tc.runner)
			}
			if got := cfg.LongestConnect(); got != tc.want {
				t.Errorf("LongestConnect = %s", got)
			}
			msg := connectTimeoutError(s, tc.want).Error()
			if tc.runner != "" && !strings.Contains(msg, "may still be downloading") ||
				tc.settings != "" && (strings.Contains(msg, "timeout:") || !strings.Contains(msg, "settings.connect_timeout")) {
				t.Errorf("error %q", msg)
			}
		})
	}
}
