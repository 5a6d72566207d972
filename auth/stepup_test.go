package auth

import (
	"slices"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/auth/authtest"
)

// A 403 insufficient_scope steps up to the union of the scopes held and
// those its challenge names; a challenge that names nothing new is an
// error, never a sign-in at the same scope.
func TestStepUpScopes(t *testing.T) {
	for _, c := range []struct {
		name, challenge string
		have, want      []string
		err             string
	}{
		{name: "adds", have: []string{"mcp:basic"}, challenge: `Bearer scope="mcp:basic mcp:write", resource_metadata="https://x/prm", error="insufficient_scope"`, want: []string{"mcp:basic", "mcp:write"}},
		{name: "keeps what it holds", have: []string{"mcp:read", "mcp:basic"}, challenge: `Bearer error="insufficient_scope", scope="mcp:write"`, want: []string{"mcp:read", "mcp:basic", "mcp:write"}},
		{name: "none held", challenge: `Bearer error="insufficient_scope", scope="mcp:write"`, want: []string{"mcp:write"}},
		{name: "same scope", have: []string{"mcp:basic"}, challenge: `Bearer error="insufficient_scope", scope="mcp:basic"`, err: "would not help"},
		{name: "no scope named", have: []string{"mcp:basic"}, challenge: `Bearer error="insufficient_scope"`, err: "named none"},
		{name: "no challenge", have: []string{"mcp:basic"}, err: "named none"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := StepUpScopes(c.have, c.challenge)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("got %v, %v; want an error saying %q", got, err, c.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, c.want) {
				t.Errorf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

// The step-up sign-in asks for the union: the second authorization
// request carries every scope, the first's and the challenge's.
func TestStepUpSignInAsksForTheUnion(t *testing.T) {
	a := authtest.NewServer(t)
	rec, err := login(t, a, LoginOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := a.Authorize.Get("scope")
	scopes, err := StepUpScopes(rec.Scopes, `Bearer error="insufficient_scope", scope="mcp:write"`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := login(t, a, LoginOptions{Scopes: scopes, Previous: rec}); err != nil {
		t.Fatal(err)
	}
	if got := a.Authorize.Get("scope"); first != "mcp:read" || got != "mcp:read mcp:write" {
		t.Errorf("authorization requests asked for %q, then %q; want mcp:read, then mcp:read mcp:write", first, got)
	}
}
