package mcphttp

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/server/identity"
)

// Whatever a client sends as Mcp-Session-Id, a sealer opens only an id it
// sealed, for the credential it sealed it for, and never panics. (Its
// seeds run with the tests; the fuzzing engine cannot run in this package,
// whose TestMain makes every child of the test binary a fake upstream.)
func FuzzOpenSealedID(f *testing.F) {
	sl, err := newSealer([][]byte{sealKey1, sealKey2})
	if err != nil {
		f.Fatal(err)
	}
	// The one state ever sealed: an id that opens must be a sealing of
	// it (fuzzing workers seal it each with a random GCM nonce, so the
	// bytes differ between processes; the state must not).
	want := sealedState{Nonce: "n", Expires: 4102444800} // 2100
	good, err := sl.seal(want, "a")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-2])
	f.Add("")
	f.Add("00000000000000000000000000000000")
	f.Add(strings.Repeat("A", 5000))
	f.Fuzz(func(t *testing.T, id string) {
		st, err := sl.open(id, "a", time.Now())
		if err != nil {
			return
		}
		if st.Nonce != want.Nonce || st.Expires != want.Expires || st.URLProfile != "" {
			t.Fatalf("opened %q as %+v", id, st)
		}
		if _, err := sl.open(id, "b", time.Now()); err == nil {
			t.Fatalf("%q opened for another credential", id)
		}
	})
}

// A state too large for a header is sealed without what a resumed
// session can do without, first the experimental capabilities, then the
// caller's groups, and still opens.
func TestSealedIDShrinks(t *testing.T) {
	t.Parallel()
	sl, _ := newSealer([][]byte{sealKey1})
	big := strings.Repeat("x", 3000)
	st := sealedState{Nonce: "n", Expires: time.Now().Add(time.Hour).Unix(), State: server.SessionState{
		ClientInfo:   mcp.Implementation{Name: "t"},
		Capabilities: mcp.ClientCapabilities{Experimental: map[string]any{"big": big}},
		Identity:     &identity.Identity{Kind: identity.KindJWT, Subject: "alice", Groups: []string{big}},
	}}
	id, err := sl.sealWithin(st, "a")
	if err != nil || len(id) > maxSealedID {
		t.Fatalf("%d bytes: %v", len(id), err)
	}
	got, err := sl.open(id, "a", time.Now())
	if err != nil || got.State.Capabilities.Experimental != nil || got.State.Identity == nil || got.State.Identity.Subject != "alice" ||
		got.State.Identity.Groups != nil || got.State.ClientInfo.Name != "t" {
		t.Errorf("opened %+v, %v", got, err)
	}
	small, _ := sl.sealWithin(sealedState{Nonce: "n", Expires: st.Expires, State: server.SessionState{Identity: &identity.Identity{Subject: "bob", Groups: []string{"g"}}}}, "a")
	if got, err := sl.open(small, "a", time.Now()); err != nil || len(got.State.Identity.Groups) != 1 {
		t.Errorf("a small state lost its groups: %+v %v", got, err)
	}
}

// An id sealed before the sealer sealed through types/seal (kept as the
// bytes it was) still opens, with its key found by its id byte among
// others: sessions survive the upgrade of a replica.
func TestSealedIDFromBefore(t *testing.T) {
	t.Parallel()
	const old = "ctF2msEZmY0nGQY_5xtuXJfVQNxn275WT6C5WGuinVMS3cd1amkpHLun0d43ElG0GNunQyHwQQ"
	sl, err := newSealer([][]byte{sealKey1, bytes.Repeat([]byte{1}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sl.open(old, "alice", time.Now())
	if err != nil || st.Nonce != "abc" || st.Expires != 4102444800 || st.key != 1 {
		t.Fatalf("opened %+v, %v", st, err)
	}
	if _, err := sl.open(old, "bob", time.Now()); err != errUnsealed {
		t.Fatalf("opened for another credential: %v", err)
	}
}
