//go:build unix

package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// Two clients of one config with different profiles share one hub, and
// each sees exactly its profile's groups, in its profile's mode.
func TestSharedHubProfiles(t *testing.T) {
	t.Parallel() // its shared hub and state dir are its own
	body := strings.Replace(profilesConfig(), `settings: {shared: "off"}`, "settings: { shared_idle: 1s, stop_grace: 1s }", 1)
	s := newShared(t, body)
	flat := startProcess(t, s.env, raceHubBin, "serve", "-c", s.path, "--profile", "flat")
	flat.initializeAs("flat-client")
	var names []string
	await.Costly(t, 30*time.Second, "a and c listed", func() bool {
		names = toolNames(t, flat.call("tools/list", nil))
		return slices.Contains(names, "a__a_echo") && slices.Contains(names, "c__c_echo")
	})
	for _, n := range names {
		if !strings.HasPrefix(n, "a__") && !strings.HasPrefix(n, "c__") {
			t.Errorf("profile flat lists %q", n)
		}
	}
	dyn := startProcess(t, s.env, raceHubBin, "serve", "-c", s.path, "--profile", "dyn")
	dyn.initializeAs("dyn-client")
	dyn.waitGroupsReady("a", "c")
	if n := len(s.status(t).Sessions); n != 2 {
		t.Errorf("the shared hub has %d sessions, want 2 (one hub for both profiles)", n)
	}
}

// A clients: rule's profile is the view of a client of that name on one
// shared hub, without --profile: Cursor sees the flat profile's groups, a
// client the rule does not match the whole config (dynamic mode's two
// tools), and --profile wins over the rule.
func TestSharedHubProfileByClientName(t *testing.T) {
	t.Parallel() // its shared hub and state dir are its own
	body := strings.Replace(profilesConfig(), `settings: {shared: "off"}`, "settings: { shared_idle: 1s, stop_grace: 1s }", 1) +
		"clients:\n  - { match: \"cursor*\", profile: flat }\n"
	s := newShared(t, body)
	cursor := s.bridge(t, "cursor-vscode")
	var names []string
	await.Costly(t, 30*time.Second, "a and c listed", func() bool {
		names = toolNames(t, cursor.call("tools/list", nil))
		return slices.Contains(names, "a__a_echo") && slices.Contains(names, "c__c_echo")
	})
	for _, n := range names {
		if !strings.HasPrefix(n, "a__") && !strings.HasPrefix(n, "c__") {
			t.Errorf("cursor's profile lists %q", n)
		}
	}
	other := s.bridge(t, "claude-code")
	if names := toolNames(t, other.call("tools/list", nil)); !slices.Contains(names, "get_dynamic_tools") || slices.Contains(names, "a__a_echo") {
		t.Errorf("a client no rule names lists %v, want the whole config's meta-tools", names)
	}
	chosen := startProcess(t, s.env, raceHubBin, "serve", "-c", s.path, "--profile", "dyn")
	chosen.initializeAs("cursor-vscode")
	if names := toolNames(t, chosen.call("tools/list", nil)); slices.Contains(names, "a__a_echo") {
		t.Errorf("--profile dyn lost to the clients: rule: %v", names)
	}
	if n := len(s.status(t).Sessions); n != 3 {
		t.Errorf("the shared hub has %d sessions, want 3", n)
	}
}
