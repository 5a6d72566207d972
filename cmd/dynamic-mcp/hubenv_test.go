package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// The shared hub's environment is the login shell's, with the config's
// variables and the hub's own laid over it from the bridge: nothing else
// of the client that started it (its PATH, its own variables) reaches it.
func TestHubEnv(t *testing.T) {
	t.Parallel()
	shell := filepath.Join(t.TempDir(), "shell")
	script := "#!/bin/sh\nexport FROM_PROFILE=yes TOKEN=profile UNSET_IN_BRIDGE=profile\n" +
		"while [ $# -gt 1 ]; do shift; done\nexec /bin/sh -c \"$1\"\n"
	if err := os.WriteFile(shell, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	bridgeEnv := []string{"SHELL=" + shell, "HOME=/home/u", "PATH=/usr/bin:/bin", "CLAUDECODE=1",
		"TOKEN=bridge", "DYNAMIC_MCP_STATE=x", "OTEL_SDK_DISABLED=true", hubEnvVar + "=1"}
	env := envMap(hubEnv(t.Context(), testBin, bridgeEnv, []string{"TOKEN", "UNSET_IN_BRIDGE"}, slog.New(slog.DiscardHandler)))
	want := map[string]string{"FROM_PROFILE": "yes", "TOKEN": "bridge", "HOME": "/home/u", "PATH": basePATH,
		"DYNAMIC_MCP_STATE": "x", "OTEL_SDK_DISABLED": "true", "SHELL": shell}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
	for _, k := range []string{"CLAUDECODE", "UNSET_IN_BRIDGE", "DYNAMIC_MCP_SELF"} {
		if v, ok := env[k]; ok {
			t.Errorf("%s=%q reached the hub", k, v)
		}
	}

	// A shell that fails: who the user is and the bridge's PATH, with
	// the overlay, and nothing else of the client's.
	bridgeEnv[0] = "SHELL=/bin/false"
	env = envMap(hubEnv(t.Context(), testBin, bridgeEnv, []string{"TOKEN"}, slog.New(slog.DiscardHandler)))
	want = map[string]string{"PATH": "/usr/bin:/bin", "HOME": "/home/u", "TOKEN": "bridge", "SHELL": "/bin/false", "DYNAMIC_MCP_STATE": "x"}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("failing shell: %s=%q, want %q", k, env[k], v)
		}
	}
	if v, ok := env["CLAUDECODE"]; ok {
		t.Errorf("failing shell: CLAUDECODE=%q reached the hub", v)
	}
}

// A profile that ends oddly still gives its environment: an exit status
// of its own after the dump, an EXIT trap that prints after it, a
// background job (see TestLoginEnvNotHeldByABackgroundJob). What the
// bridge says of the hub's own variables holds even where the profile
// sets them and the bridge has none.
func TestHubEnvOddProfiles(t *testing.T) {
	t.Parallel()
	for name, profile := range map[string]string{
		"background job": "sleep 30 &\n",
		"exit status":    "trap 'exit 3' EXIT\n",
		"trap prints":    "trap 'echo bye' EXIT\n",
		"own state dir":  "export DYNAMIC_MCP_HOME=/elsewhere XDG_RUNTIME_DIR=/elsewhere/run\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			shell := profileShell(t, profile)
			env := envMap(hubEnv(t.Context(), testBin, []string{"SHELL=" + shell, "HOME=/home/u", hubEnvVar + "=1"}, nil, slog.New(slog.DiscardHandler)))
			if env["FROM_PROFILE"] != "yes" {
				t.Errorf("the profile's environment was not read: %v", env)
			}
			for _, k := range []string{"DYNAMIC_MCP_HOME", "XDG_RUNTIME_DIR"} {
				if v, ok := env[k]; ok {
					t.Errorf("%s=%q, which the bridge does not have, reached the hub", k, v)
				}
			}
		})
	}
}

// A background job of the profile that holds the shell's stdout does not
// hold up the read: with no deadline of its own, loginEnv returns once
// the shell has exited (after cmd.WaitDelay), not when the job ends, an
// hour later; and the job does not outlive the read. Without WaitDelay,
// the read waits for the job.
func TestLoginEnvNotHeldByABackgroundJob(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "job.pid")
	shell := profileShell(t, "sleep 3600 & echo \\$! > '"+pidFile+"'\n")
	jobPID := func() (int, error) {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return 0, err
		}
		return strconv.Atoi(strings.TrimSpace(string(b)))
	}
	t.Cleanup(func() { // if the read did not end it
		if pid, err := jobPID(); err == nil && pid > 0 {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
	})
	type read struct {
		env map[string]string
		err error
	}
	done := make(chan read, 1)
	go func() {
		env, err := loginEnv(context.Background(), shell, testBin, []string{"PATH=" + basePATH, hubEnvVar + "=1"})
		done <- read{env, err}
	}()
	var r read
	select {
	case r = <-done:
	case <-time.After(time.Minute): // bounds a hang: the job lasts an hour
		t.Fatal("the read waits for the profile's background job")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.env["FROM_PROFILE"] != "yes" {
		t.Errorf("the profile's environment was not read: %v", r.env)
	}
	pid, err := jobPID()
	if err != nil {
		t.Fatal(err)
	}
	await.For(t, 10*time.Second, "the profile's background job ended", func() bool { return processGone(pid) })
}

// profileShell is a $SHELL whose profile exports FROM_PROFILE=yes and
// then runs profile before the command it is given.
func profileShell(t *testing.T, profile string) string {
	shell := filepath.Join(t.TempDir(), "shell")
	script := "#!/bin/sh\nwhile [ $# -gt 1 ]; do shift; done\nexec /bin/sh -c \"export FROM_PROFILE=yes\n" + strings.ReplaceAll(profile, `"`, `\"`) + "$1\"\n"
	if err := os.WriteFile(shell, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return shell
}
