package auth

import (
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/auth/authtest"
)

// A sign-in made with another authorization server than the one the
// server now names is not used; one the server still names, one saved
// before records named theirs, and a newer sign-in on file are.
func TestMovedAuthorizationServer(t *testing.T) {
	a := authtest.NewServer(t)
	rec, err := login(t, a, LoginOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rec.AuthServer != a.URL {
		t.Fatalf("authorization server of the record: %q", rec.AuthServer)
	}
	store := NewStore(t.TempDir())
	moved := func(authServer string) error {
		r := *rec
		r.AuthServer = authServer
		if err := store.Save(&r); err != nil {
			t.Fatal(err)
		}
		src, err := NewSource(store, r.Server, r.URL)
		if err != nil {
			t.Fatal(err)
		}
		return src.Moved(t.Context(), "")
	}
	if err := moved(a.URL); err != nil {
		t.Errorf("same authorization server: %v", err)
	}
	if err := moved(""); err != nil {
		t.Errorf("a record of before: %v", err)
	}
	err = moved("https://old-as.example")
	if err == nil || !strings.Contains(err.Error(), "now names authorization server "+a.URL) {
		t.Errorf("moved: %v", err)
	}
	src, _ := NewSource(store, rec.Server, rec.URL)
	again := *rec
	again.AccessToken = "signed-in-again"
	store.Save(&again)
	if err := src.Moved(t.Context(), ""); err != nil {
		t.Errorf("with a newer sign-in on file: %v", err)
	}
}
