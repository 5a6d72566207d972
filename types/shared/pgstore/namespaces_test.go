package pgstore

import (
	"slices"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// Namespaces lists the namespaces of a prefix that hold a value, once
// each, in byte order; a prefix's characters are not patterns.
func TestNamespaces(t *testing.T) {
	s := open(t, pgtest.Start(t))
	ctx := t.Context()
	for _, nk := range [][2]string{{"token:user:b", "x"}, {"token:user:a", "x"}, {"token:user:a", "y"}, {"token", "x"}, {"tokenXuser:c", "x"}} {
		if err := s.Put(ctx, nk[0], nk[1], []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Namespaces(ctx, "token:user:")
	if err != nil || !slices.Equal(got, []string{"token:user:a", "token:user:b"}) {
		t.Fatalf("Namespaces = %q, %v", got, err)
	}
	if got, _ := s.Namespaces(ctx, "token_user%"); len(got) != 0 {
		t.Fatalf("a prefix matched as a pattern: %q", got)
	}
	if err := s.Delete(ctx, "token:user:b", "x"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Namespaces(ctx, "token:user:"); !slices.Equal(got, []string{"token:user:a"}) {
		t.Fatalf("after the last value went: %q", got)
	}
}
