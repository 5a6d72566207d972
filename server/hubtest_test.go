package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/secrets"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// flatFakeYAML is the config of a flat-mode hub in front of one fake
// upstream, group "f", with its state in stateDir, no audit, settings (the
// inside of settings: {...}) and more of the group's keys (lines indented
// by four spaces).
func flatFakeYAML(stateDir, settings, group string) string {
	return fmt.Sprintf("mode: flat\nstate_dir: %q\naudit: {path: \"off\"}\nsettings: {%s}\ngroups:\n  f:\n    description: fake\n    command: %q\n%s",
		stateDir, settings, fakeBin, group)
}

// runHub runs a hub for the config yaml, built and started in serve's
// order (hub first, then its upstreams), until the test ends. With
// declareCaps the upstreams are told that the client side declares no
// capabilities, instead of the hub's default (upstream.DeclaredCapabilities).
func runHub(t testing.TB, yaml string, declareCaps bool) (*Hub, *upstream.Manager) {
	t.Helper()
	h, mgr, _ := startHub(t, yaml, declareCaps)
	return h, mgr
}

// startHub is runHub that also returns stop, which closes the hub and its
// upstreams before the test ends (so that another may start on the same
// state); the test's end calls it too.
func startHub(t testing.TB, yaml string, declareCaps bool) (*Hub, *upstream.Manager, func()) {
	t.Helper()
	cfg, err := config.Loader{Secrets: secrets.Source{}}.Parse("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, yaml)
	}
	logger := testLogger()
	mgr := upstream.New(cfg, logger)
	if declareCaps {
		mgr.SetClientCapabilities(mcp.ClientCapabilities{})
	}
	h, err := New(cfg, mgr, logger)
	if err != nil {
		t.Fatal(err)
	}
	h.Run()
	mgr.Start(context.Background())
	stop := sync.OnceFunc(func() { h.Close(); mgr.Close() })
	t.Cleanup(stop)
	return h, mgr, stop
}
