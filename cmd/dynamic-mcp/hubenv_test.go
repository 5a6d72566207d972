package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
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
	env := envMap(hubEnv(t.Context(), fakeBin, bridgeEnv, []string{"TOKEN", "UNSET_IN_BRIDGE"}, slog.New(slog.DiscardHandler)))
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

	// A shell that fails: the bridge's environment, as it is.
	bridgeEnv[0] = "SHELL=/bin/false"
	if got := hubEnv(t.Context(), fakeBin, bridgeEnv, nil, slog.New(slog.DiscardHandler)); !slices.Equal(got, bridgeEnv) {
		t.Errorf("with a failing shell: %v, want the bridge's %v", got, bridgeEnv)
	}
}
