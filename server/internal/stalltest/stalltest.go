// Package stalltest checks, for the attacks of a client that sends and
// stops reading (the standalone hub's, server, and the shared hub's,
// server/mcplocal), that the hub held the client back rather than took
// what it sent: the client's writes wait, and the hub's heap grew little.
package stalltest

import "runtime"

// The attack: Calls calls of CallSize bytes each (16 MiB). A session
// holds at most 256 calls in flight and 256 answers waiting for the
// client (jsonrpc's DefaultMaxInflight and WaitRoom), about 8 MiB with
// their copies; the pipes hold a few calls more. Calls is twice what the
// hub may take of a client that does not read, so a hub that takes them
// all ends the client's writes (HeldBack fails), and no more than that:
// under -race each call cost the attack about 7 ms of CPU, checked and
// copied at each step.
const (
	Calls    = 1024
	CallSize = 16 << 10
	sent     = "16 MiB"
	// limit is how far the heap may grow while the client does not
	// read: half again what a session holds (1.3-8.2 MiB measured), and
	// three quarters of what the client sends, so that a hub which holds
	// most of the calls fails too, not only one that holds them all.
	limit = 12 << 20
	// full is what a pipe (64 KiB) holds once its reader stops reading
	// it: more than three calls.
	full = 48 << 10
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
