package auth

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/auth/authtest"
)

// Two processes' first sign-ins at once (two stores of one state
// directory) make one registration: the second waits for the first's,
// under the file lock, and uses it; the registration is sealed in its
// file, and a third sign-in, later, reuses it.
func TestClientsRegisterOnceAcrossProcesses(t *testing.T) {
	a := authtest.NewServer(t)
	a.RegisterDelay = 500 * time.Millisecond // the two sign-ins overlap in it
	dir := filepath.Join(t.TempDir(), "oauth-servers")
	const redirect = "https://hub.example/auth/callback"
	ids := make([]string, 3)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			f, err := BeginWeb(t.Context(), "docs", a.URL+"/mcp", redirect, LoginOptions{Clients: NewStore(dir).Clients("docs")})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = f.Export().ClientID
		})
	}
	wg.Wait()
	f, err := BeginWeb(t.Context(), "docs", a.URL+"/mcp", redirect, LoginOptions{Clients: NewStore(dir).ForUser("jwt:carol").Clients("docs")})
	if err != nil {
		t.Fatal(err)
	}
	ids[2] = f.Export().ClientID
	if a.Registered != 1 || ids[0] != "dyn-1" || ids[1] != "dyn-1" || ids[2] != "dyn-1" {
		t.Errorf("three sign-ins, two at once: %d registrations, clients %v; want 1, dyn-1 for all", a.Registered, ids)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "docs", "clients", "*.sealed"))
	if len(files) != 1 {
		t.Fatalf("registration files: %v; want one", files)
	}
	b, _ := os.ReadFile(files[0])
	if bytes.Contains(b, []byte("dyn-1")) || bytes.Contains(b, []byte(redirect)) {
		t.Errorf("the registration is not sealed: %q", b)
	}
	// Another redirect (the hub reached at another URL) is another client.
	if _, err := BeginWeb(t.Context(), "docs", a.URL+"/mcp", "https://other.example/auth/callback", LoginOptions{Clients: NewStore(dir).Clients("docs")}); err != nil {
		t.Fatal(err)
	}
	if a.Registered != 2 {
		t.Errorf("a sign-in with another redirect: %d registrations in all; want 2", a.Registered)
	}
}

// A flow's second try (after ErrClientRejected) stays one when it is
// kept as data and resumed on another replica: there is no third.
func TestWebFlowRetriedSurvivesExport(t *testing.T) {
	a := authtest.NewServer(t)
	f, err := BeginWeb(t.Context(), "docs", a.URL+"/mcp", "https://hub.example/auth/callback/docs", LoginOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Retried() {
		t.Fatal("a new flow is a retry")
	}
	f.Retry()
	g, err := ResumeWeb(f.Export(), LoginOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Retried() {
		t.Error("the resumed flow forgot it is a second try")
	}
}

// The registrations kept for a server are bounded: a caller who reaches
// the hub at ever other Hosts (each a redirect of its own) gets its
// sign-ins, but past maxKeptClients their clients are not kept.
func TestClientsKeptBounded(t *testing.T) {
	a := authtest.NewServer(t)
	dir := filepath.Join(t.TempDir(), "oauth-servers")
	for i := range maxKeptClients + 4 {
		redirect := fmt.Sprintf("https://host-%d.example/auth/callback/docs", i)
		if _, err := BeginWeb(t.Context(), "docs", a.URL+"/mcp", redirect, LoginOptions{Clients: NewStore(dir).Clients("docs")}); err != nil {
			t.Fatalf("sign-in %d: %v", i, err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "docs", "clients", "*.sealed"))
	if len(files) != maxKeptClients {
		t.Errorf("%d registrations kept for %d redirects; want %d", len(files), maxKeptClients+4, maxKeptClients)
	}
}
