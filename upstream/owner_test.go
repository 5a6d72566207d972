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
	one := &conn{id: 1}
	if got := s.callContext(bg); got != bg || Ambiguous(got) {
		t.Error("no call in flight: the request's own context")
	}
	a1 := WithOwner(bg, "a")
	doneA1 := s.trackCall(&a1, one)
	a2 := WithOwner(bg, "a")
	doneA2 := s.trackCall(&a2, one)
	if got := s.callContext(bg); got.Value(ownerKey{}) != "a" || Ambiguous(got) {
		t.Errorf("calls of one owner: %v", got)
	}
	b := WithOwner(bg, "b")
	doneB := s.trackCall(&b, one)
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

// A notification or request on one connection is tied only to the calls
// in flight on that connection: another connection's calls (a reconnect's,
// another owner's own) neither claim it nor make it ambiguous.
func TestCallContextCountsOnlyItsConnection(t *testing.T) {
	s := &Server{}
	bg := context.Background()
	a := WithOwner(bg, "a")
	defer s.trackCall(&a, &conn{id: 1})()
	b := WithOwner(bg, "b")
	defer s.trackCall(&b, &conn{id: 2})()
	if got := s.callContext(withConn(bg, 1)); got.Value(ownerKey{}) != "a" || Ambiguous(got) || ConnOf(got) != 1 {
		t.Errorf("on connection 1, where only a's call is in flight: owner %v, ambiguous %v, connection %v", got.Value(ownerKey{}), Ambiguous(got), ConnOf(got))
	}
	if got := s.callContext(withConn(bg, 3)); got.Value(ownerKey{}) != nil || Ambiguous(got) {
		t.Errorf("on connection 3, where no call is in flight: owner %v, ambiguous %v", got.Value(ownerKey{}), Ambiguous(got))
	}
	if got := s.callContext(bg); !Ambiguous(got) {
		t.Error("on no connection known: calls of two owners, not marked ambiguous")
	}
}
