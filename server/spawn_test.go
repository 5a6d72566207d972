package server

import (
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A goroutine the hub starts (a held call's upstream call, a listen's
// window, an unsubscribe) that panics is recovered and counted as a
// request's panic is: the hub and every other session go on.
func TestSpawnedGoroutineRecovers(t *testing.T) {
	t.Parallel()
	h := newTestHub(config.ModeFlat)
	defer h.mgr.Close()
	h.Run()
	if !h.spawn(func() { panic("boom") }) {
		t.Fatal("not spawned")
	}
	if err := h.Close(); err != nil { // waits for the goroutine
		t.Fatal(err)
	}
	if n := h.panics.Count(); n != 1 {
		t.Fatalf("%d panics recovered, want 1", n)
	}
}
