package rounds

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/call/calltest"

	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// A server's request is put to the held call its part names (the Part of
// the hop it came during); else to the held call of its owner whose
// upstream call to that server runs, the latest where several do, and to
// none once that call has ended.
func TestHeldByOwnerAndServer(t *testing.T) {
	r, err := New(Hub{})
	if err != nil {
		t.Fatal(err)
	}
	s1, s2 := new(upstream.Server), new(upstream.Server)
	owner, other := new(testOwner), new(testOwner)
	first, second := &Held{id: 1, server: s1}, &Held{id: 2, server: s1}
	endFirst := r.inputs.run(owner, first)
	if got := r.Held(owner, s1, 0); got != first {
		t.Fatalf("Held(owner, s1) = %p, want the first call %p", got, first)
	}
	if r.Held(owner, s2, 0) != nil || r.Held(other, s1, 0) != nil || r.Held(nil, s1, 0) != nil {
		t.Fatal("a call of another server or owner found")
	}
	endSecond := r.inputs.run(owner, second)
	if got := r.Held(owner, s1, 0); got != second {
		t.Fatalf("with two running: %p, want the latest %p", got, second)
	}
	if got := r.Held(owner, s1, first.id); got != first {
		t.Fatalf("a request during the first call: %p, want the first %p", got, first)
	}
	if got := r.Held(owner, s2, first.id); got != nil {
		t.Fatalf("a request of another server during the first call: %p", got)
	}
	endSecond()
	if got := r.Held(owner, s1, 0); got != first {
		t.Fatalf("after the latest ended: %p, want the first %p", got, first)
	}
	endFirst()
	if r.Held(owner, s1, 0) != nil || len(r.inputs.running) != 0 {
		t.Fatalf("ended calls are still found: %v", r.inputs.running)
	}
}

// testOwner is an owner of calls upstream (a client session).
type testOwner struct{ calltest.Owner }

// heldSession is a client session of a request with a session.
type heldSession struct{ call.Session }

func (heldSession) Sessionless() bool { return false }

// A held call whose send upstream panics (the hub's Spawn recovers it)
// still ends, with an error for its client, instead of leaving a call
// that never ends to its owner's later server requests.
func TestHeldCallWhoseSendPanicsEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	parts := make(chan uint64, 1) // the Part of the held call's hop
	r, err := New(Hub{
		Context: ctx,
		Spawn: func(f func()) bool {
			wg.Go(func() {
				defer func() { _ = recover() }()
				f()
			})
			return true
		},
		Send: call.HopFunc(func(_ context.Context, h *call.Hop) (json.RawMessage, upstream.ConnID, error) {
			parts <- h.Part
			panic("a bug in a stage")
		}),
		Release: func(upstream.Owner) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.startHeld(ctx, &call.Call{Origin: call.Origin{Owner: new(testOwner), Session: heldSession{}}, Asked: call.Asked{Method: "tools/call"}}, nil, nil, time.Minute, mcp.ClientCapabilities{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the held call never ended")
	}
	if p.err == nil {
		t.Fatal("a call that panicked ended without an error")
	}
	if part := <-parts; part == 0 || part != p.id {
		t.Errorf("the held call's hop is part %d, want its number %d", part, p.id)
	}
	p.consume()
}
