// Package stalltest checks, for the attacks of a client that sends and
// stops reading (the standalone hub's, server, and the shared hub's,
// server/mcplocal), that the hub held the client back rather than took
// what it sent: the client's writes wait, and the hub's heap grew little.
package stalltest

import "runtime"

// Inflight is the session_inflight of the hub attacked (Setting): a
// session holds at most Inflight calls in flight and Inflight answers
// waiting for the client (jsonrpc's WaitRoom), whatever the number. A
// quarter of the default's 256, so that the attack sends a quarter of the
// bytes: under -race each call cost it about 7 ms of CPU, checked and
// copied at each step.
const Inflight = 64

// Setting is Inflight as the hub's setting, inside settings: {...}.
const Setting = "session_inflight: 64"

// The attack: Calls calls of CallSize bytes each (4 MiB). A session holds
// at most 2*Inflight of them, about 2 MiB with their copies; the pipes
// hold a few calls more. Calls is twice what the hub may take of a client
// that does not read, so a hub that takes them all ends the client's
// writes (HeldBack fails), and no more than that.
const (
	Calls    = 4 * Inflight
	CallSize = 16 << 10
	sent     = "4 MiB"
	// limit is how far the heap may grow while the client does not
	// read: half again what a session holds, and three quarters of what
	// the client sends, so that a hub which holds most of the calls
	// fails too, not only one that holds them all.
	limit = 3 << 20
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
