package upstream

import (
	"context"
	"testing"
)

// A request a stdio server sends back is tied to the one owner whose
// calls are in flight, and to none when calls of several owners are: an
// elicitation never reaches a client whose call did not cause it.
func TestCallContextNeverGuesses(t *testing.T) {
	s := &Server{}
	bg := context.Background()
	if got := s.callContext(bg); got != bg || Ambiguous(got) {
		t.Error("no call in flight: the request's own context")
	}
	a1 := WithOwner(bg, "a")
	doneA1 := s.trackCall(&a1)
	a2 := WithOwner(bg, "a")
	doneA2 := s.trackCall(&a2)
	if got := s.callContext(bg); got.Value(ownerKey{}) != "a" || Ambiguous(got) {
		t.Errorf("calls of one owner: %v", got)
	}
	b := WithOwner(bg, "b")
	doneB := s.trackCall(&b)
	if got := s.callContext(bg); !Ambiguous(got) {
		t.Error("calls of two owners in flight: not marked ambiguous")
	}
	doneA1()
	doneA2()
	if got := s.callContext(bg); got.Value(ownerKey{}) != "b" || Ambiguous(got) {
		t.Errorf("once a's calls ended: %v", got)
	}
	doneB()
}
