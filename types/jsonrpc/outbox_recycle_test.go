package jsonrpc

import "testing"

// A batch given back once written holds the next messages queued, in
// order, its old messages let go: a put and a take then allocate nothing.
func TestOutboxRecycle(t *testing.T) {
	o := NewOutbox(0)
	_ = o.Send([]byte("a"))
	_ = o.Send([]byte("b"))
	batch, rels := o.TakeRelated()
	if len(batch) != 2 || string(batch[0]) != "a" || string(batch[1]) != "b" || len(rels) != 2 {
		t.Fatalf("took %q", batch)
	}
	o.Recycle(batch, rels)
	if batch[0] != nil || batch[1] != nil {
		t.Errorf("the batch given back still holds %q", batch)
	}
	_ = o.Send([]byte("c"))
	next, _ := o.TakeRelated()
	if len(next) != 1 || string(next[0]) != "c" || &next[:1][0] != &batch[:1][0] {
		t.Fatalf("took %q, want [c] in the batch given back", next)
	}
	o.Recycle(next, nil)
	msg := []byte("d")
	if n := testing.AllocsPerRun(100, func() {
		_ = o.Send(msg)
		_ = o.Send(msg)
		b, r := o.TakeRelated()
		o.Recycle(b, r)
	}); n != 0 {
		t.Errorf("%v allocations a put and take", n)
	}
	for range maxSpare + 1 {
		_ = o.Send(msg)
	}
	burst, burstRels := o.TakeRelated()
	o.Recycle(burst, burstRels)
	_ = o.Send(msg)
	if after, _ := o.TakeRelated(); &after[:1][0] == &burst[:1][0] {
		t.Errorf("a burst's batch of room for %d messages was kept (at most %d)", cap(burst), maxSpare)
	}
}
