//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// The variant issue 22 names: two standalone hubs and a shared hub with
// three clients on one sign-in, against the authorization server that
// revokes the grant on a replayed refresh token, every client calling
// without pause: the three processes renew in turn through the token
// store's lock, the shared hub once for its three clients; the grant
// stands and every call is answered.
func TestHubsAndASharedHubShareOneSignInAcrossRenewals(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for seconds")
	}
	t.Parallel()
	a, home := signedIn(t)
	var clients []*client
	for i := range 2 {
		cfg := filepath.Join(home, fmt.Sprintf("standalone%d.yaml", i))
		os.WriteFile(cfg, []byte(protectedConfig(a)), 0o600)
		c := startProcess(t, []string{"DYNAMIC_MCP_HOME=" + home}, hubBin, "serve", "--standalone", "-c", cfg)
		c.initialize("2025-06-18")
		clients = append(clients, c)
	}
	// The shared hub's state dir is the home, where the sign-in is.
	s := newSharedIn(t, home, "settings: { shared_idle: 1s, stop_grace: 1s }\n"+protectedConfig(a))
	hub := 0
	for _, name := range []string{"alpha", "beta", "gamma"} {
		clients = append(clients, s.bridge(t, name, "DYNAMIC_MCP_HOME="+home))
		if pid := s.hubPID(); hub == 0 {
			hub = pid
		} else if pid != hub {
			t.Fatalf("%s joined hub %d, not %d", name, pid, hub)
		}
	}
	if n := len(s.status(t).Sessions); n != 3 {
		t.Fatalf("the shared hub has %d sessions, want 3", n)
	}
	callThroughRenewals(t, a, clients)
}
