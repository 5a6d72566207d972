// Package stalltest checks, for the attacks of a client that sends and
// stops reading (the standalone hub's, server, and the shared hub's,
// server/mcplocal), that the hub held the client back rather than took
// what it sent: the client's writes wait, and the hub's heap grew little.
package stalltest

import (
	"runtime"
	"testing"
)

// Heap is the heap as an attack began.
type Heap struct{ base runtime.MemStats }

// Mark collects the garbage and notes the heap.
func Mark() *Heap {
	h := &Heap{}
	runtime.GC()
	runtime.ReadMemStats(&h.base)
	return h
}

// HeldBack fails t unless the client's writer is still waiting (written
// says when it ended: it must not have) and the heap grew by at most
// limit bytes since Mark; sent says how much the client sends.
func (h *Heap) HeldBack(t testing.TB, written <-chan error, limit int64, sent string) {
	t.Helper()
	var held runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&held)
	select {
	case err := <-written:
		t.Errorf("the hub took every call of a client that does not read (%v): it holds them", err)
	default:
	}
	grown := int64(held.HeapAlloc) - int64(h.base.HeapAlloc)
	t.Logf("heap grown by %d KiB while the client did not read", grown>>10)
	if grown > limit {
		t.Errorf("the hub's heap grew by %d MiB while a client did not read; want at most %d MiB (the client sends %s)", grown>>20, limit>>20, sent)
	}
}
