package auth

import (
	"fmt"
	"os"
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

// A refusal whose scopes the record on file keeps already does not
// write it again, and a server that names a new scope on each refusal
// does not grow it past maxWanted.
func TestStepUpWritesOnlyWhatIsNew(t *testing.T) {
	a := authtest.NewServer(t)
	store := savedSignIn(t, a)
	first, err := NewSource(store, "srv", a.URL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewSource(store, "srv", a.URL+"/mcp") // another process, loaded before the step-up
	if err != nil {
		t.Fatal(err)
	}
	sealed := func() string {
		b, err := os.ReadFile(store.path("srv"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const challenge = `Bearer error="insufficient_scope", scope="mcp:write"`
	if _, err := first.StepUp(t.Context(), challenge); err != nil {
		t.Fatal(err)
	}
	written := sealed() // sealed afresh each write (a nonce of its own)
	for _, s := range []*Source{first, other} {
		if want, err := s.StepUp(t.Context(), challenge); err != nil || !slices.Equal(want, []string{"mcp:read", "mcp:write"}) {
			t.Fatalf("step-up again: %q %v", want, err)
		}
	}
	if sealed() != written {
		t.Error("a refusal whose scopes were kept already wrote the record again")
	}
	for i := range 2 * maxWanted {
		if _, err := first.StepUp(t.Context(), fmt.Sprintf(`Bearer error="insufficient_scope", scope="s%d"`, i)); err != nil {
			t.Fatal(err)
		}
	}
	disk, err := store.Load("srv", a.URL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(disk.Wanted); n != maxWanted || disk.Wanted[0] != "mcp:read" || disk.Wanted[1] != fmt.Sprintf("s%d", 2*maxWanted-1) {
		t.Errorf("after %d refusals each naming a new scope, %d kept: %q", 2*maxWanted, n, disk.Wanted)
	}
}

// savedSignIn signs in at a, and keeps the sign-in in a store of its own.
func savedSignIn(t *testing.T, a *authtest.Server) *Store {
	t.Helper()
	rec, err := login(t, a, LoginOptions{})
	if err != nil {
		t.Fatal(err)
	}
	store := NewStore(t.TempDir())
	if err := store.Save(rec); err != nil {
		t.Fatal(err)
	}
	return store
}
