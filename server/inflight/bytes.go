// Package inflight holds the hub's budgets of bytes of client requests in
// flight: per caller, and in all, over every face.
package inflight

import (
	"fmt"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// Bytes of client requests in flight, counted from when a request is read
// until it is answered (STYLE 17), besides each session's own bound
// (jsonrpc.DefaultMaxInflightBytes, 64 MiB): one caller's sessions
// together, and every session of the hub, over every face (stdio, the
// shared hub's local sessions, HTTP). What a request costs the hub is a
// small multiple of its bytes (its body, the params renamed for the
// upstream, the request sent there: about four times, measured), so
// these bound the memory calls in flight hold at about four times as
// much. A request over a bound is refused at once with
// CodeServerBusy, never waited for: other sessions go on.
const (
	// MaxCallerBytes bounds one caller's requests in flight: the
	// sessions of one HTTP credential, or the local user's (stdio and
	// the shared hub's sessions).
	MaxCallerBytes = 128 << 20
	// MaxBytes bounds every session's requests in flight: two
	// callers' worth, so that one caller at its bound leaves room for
	// another.
	MaxBytes = 256 << 20
)

// Budgets are the hub's budgets of bytes in flight.
type Budgets struct {
	all       *semaphore.Weighted
	allMax    int64
	callerMax int64

	mu      sync.Mutex       // guards callers
	callers map[string]int64 // bytes held, by caller; none at 0
}

// New makes budgets of callerMax bytes a caller and allMax in all.
func New(callerMax, allMax int64) *Budgets {
	return &Budgets{all: semaphore.NewWeighted(allMax), allMax: allMax, callerMax: callerMax, callers: map[string]int64{}}
}

// admit counts n bytes of caller's against its budget and the hub's; a
// request larger than a whole budget is taken when nothing else holds it.
// It returns what gives them back, to be called once, or why the
// request is refused.
func (b *Budgets) admit(caller string, n int64) (func(), *jsonrpc.Error) {
	c := min(n, b.callerMax)
	b.mu.Lock()
	if b.callers[caller]+c > b.callerMax {
		b.mu.Unlock()
		return nil, jsonrpc.Errorf(jsonrpc.CodeServerBusy, fmt.Sprintf("too many bytes in flight: this caller's requests being answered hold most of its %s budget, and this one is %s; try again when some are answered",
			jsonrpc.ByteSize(b.callerMax), jsonrpc.ByteSize(n)))
	}
	b.callers[caller] += c
	b.mu.Unlock()
	a := min(n, b.allMax)
	if !b.all.TryAcquire(a) {
		b.give(caller, c)
		return nil, jsonrpc.Errorf(jsonrpc.CodeServerBusy, fmt.Sprintf("too many bytes in flight: the hub's requests being answered hold most of its %s budget, and this one is %s; try again when some are answered",
			jsonrpc.ByteSize(b.allMax), jsonrpc.ByteSize(n)))
	}
	// Called once (jsonrpc.ConnOptions.Admit), as the Conn's own budget's
	// release is, which counts on it too: no sync.Once, an allocation a
	// request.
	return func() {
		b.all.Release(a)
		b.give(caller, c)
	}, nil
}

func (b *Budgets) give(caller string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.callers[caller] -= n; b.callers[caller] <= 0 {
		delete(b.callers, caller)
	}
}

// Held is the bytes caller's requests in flight hold.
func (b *Budgets) Held(caller string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.callers[caller]
}

// Admit is the jsonrpc.ConnOptions.Admit of a session of caller (an
// HTTP credential; "" for the local user): its requests count against
// caller's budget of bytes in flight and the hub's (see MaxCallerBytes).
func (b *Budgets) Admit(caller string) func(n int64) (func(), *jsonrpc.Error) {
	return func(n int64) (func(), *jsonrpc.Error) { return b.admit(caller, n) }
}
