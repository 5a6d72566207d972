package rounds

import (
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// A server's request is put to the held call of its owner whose upstream
// call to that server runs, the latest where several do, and to none once
// that call has ended: the event's owner says which, not its context.
func TestHeldByOwnerAndServer(t *testing.T) {
	r, err := New(Hub{})
	if err != nil {
		t.Fatal(err)
	}
	s1, s2 := new(upstream.Server), new(upstream.Server)
	owner, other := new(int), new(int)
	first, second := &Held{server: s1}, &Held{server: s1}
	endFirst := r.inputs.run(owner, first)
	if got := r.Held(owner, s1); got != first {
		t.Fatalf("Held(owner, s1) = %p, want the first call %p", got, first)
	}
	if r.Held(owner, s2) != nil || r.Held(other, s1) != nil || r.Held(nil, s1) != nil {
		t.Fatal("a call of another server or owner found")
	}
	endSecond := r.inputs.run(owner, second)
	if got := r.Held(owner, s1); got != second {
		t.Fatalf("with two running: %p, want the latest %p", got, second)
	}
	endSecond()
	if got := r.Held(owner, s1); got != first {
		t.Fatalf("after the latest ended: %p, want the first %p", got, first)
	}
	endFirst()
	if r.Held(owner, s1) != nil || len(r.inputs.running) != 0 {
		t.Fatalf("ended calls are still found: %v", r.inputs.running)
	}
}
