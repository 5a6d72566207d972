package fakeupstream

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The fake is built in one place per checkout, which each
// build replaces when it changed: builds leave one program behind, whole, whatever ended
// the runs that made them, and nothing else; a program no run has built
// for a week (of a checkout deleted since) goes.
func TestBuildLeavesOneProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the fake twice")
	}
	dir := t.TempDir()
	stale := filepath.Join(dir, "fake-upstream-0123456789abcdef")
	if err := os.WriteFile(stale, []byte("old"), 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-staleAfter - time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	first, err := buildIn(dir, "fake-upstream", "github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream/fake")
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	second, err := buildIn(dir, "fake-upstream", "github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream/fake")
	if err != nil {
		t.Fatal(err)
	}
	if first != second || filepath.Dir(first) != dir {
		t.Errorf("built as %s, then as %s: want one place in %s", first, second, dir)
	}
	// Nothing changed: the second build kept the first's program (a link
	// of it is seconds on a busy machine, in every package's TestMain).
	if after, err := os.Stat(second); err != nil || !os.SameFile(before, after) {
		t.Errorf("the second build, of the same sources, wrote a new program (%v)", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != filepath.Base(first) {
		t.Errorf("the build directory holds %q, want only %s", names, filepath.Base(first))
	}
	if info, err := os.Stat(first); err != nil {
		t.Error(err)
	} else if info.Size() < 1<<20 || info.Mode()&0o100 == 0 {
		t.Errorf("the program built: %d bytes, mode %v", info.Size(), info.Mode())
	}
}
