//go:build unix

package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Two clients of one config with different profiles share one hub, and
// each sees exactly its profile's groups, in its profile's mode.
func TestSharedHubProfiles(t *testing.T) {
	body := strings.Replace(profilesConfig(), `settings: {shared: "off"}`, "settings: { shared_idle: 1s, stop_grace: 1s }", 1)
	s := newShared(t, body)
	flat := startProcess(t, s.env, hubBin, "serve", "-c", s.path, "--profile", "flat")
	flat.initializeAs("flat-client")
	var names []string
	waitFor(t, 30*time.Second, "a and c listed", func() bool {
		names = toolNames(t, flat.call("tools/list", nil))
		return slices.Contains(names, "a__a_echo") && slices.Contains(names, "c__c_echo")
	})
	for _, n := range names {
		if !strings.HasPrefix(n, "a__") && !strings.HasPrefix(n, "c__") {
			t.Errorf("profile flat lists %q", n)
		}
	}
	dyn := startProcess(t, s.env, hubBin, "serve", "-c", s.path, "--profile", "dyn")
	dyn.initializeAs("dyn-client")
	dyn.waitGroupsReady("a", "c")
	if n := len(s.status(t).Sessions); n != 2 {
		t.Errorf("the shared hub has %d sessions, want 2 (one hub for both profiles)", n)
	}
}
