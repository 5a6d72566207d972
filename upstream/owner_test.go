package upstream

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// testOwner is an owner of the tests (see Owner): no caller, client or
// capabilities known.
type testOwner string

func (testOwner) UserKey() string   { return "" }
func (testOwner) Client() string    { return "" }
func (testOwner) SessionID() string { return "" }
func (testOwner) ClientCapabilities() (mcp.ClientCapabilities, bool) {
	return mcp.ClientCapabilities{}, false
}

// A request a stdio server sends back is tied to the one owner whose
// calls are in flight, and to none when calls of several owners are: an
// elicitation never reaches a client whose call did not cause it.
func TestCallContextNeverGuesses(t *testing.T) {
	t.Parallel()
	s := &Server{}
	bg := context.Background()
	one := &conn{id: 1}
	if got, owner, _, amb := s.callContext(bg, trackedCall{}, nil); got != bg || owner != nil || amb {
		t.Error("no call in flight: the request's own context")
	}
	a1 := s.trackCall(&callBound{parent: bg}, one, testOwner("a"), 0)
	a2 := s.trackCall(&callBound{parent: bg}, one, testOwner("a"), 0)
	if _, owner, _, amb := s.callContext(bg, trackedCall{}, nil); owner != testOwner("a") || amb {
		t.Errorf("calls of one owner: %v %v", owner, amb)
	}
	b := s.trackCall(&callBound{parent: bg}, one, testOwner("b"), 0)
	if _, _, _, amb := s.callContext(bg, trackedCall{}, nil); !amb {
		t.Error("calls of two owners in flight: not marked ambiguous")
	}
	if _, owner, _, amb := s.callContext(bg, trackedCall{}, testOwner("a")); owner != testOwner("a") || amb {
		t.Errorf("on a's own connection, with b's call in flight: %v %v", owner, amb)
	}
	s.untrackCall(a1)
	s.untrackCall(a2)
	if _, owner, _, amb := s.callContext(bg, trackedCall{}, nil); owner != testOwner("b") || amb {
		t.Errorf("once a's calls ended: %v %v", owner, amb)
	}
	if _, owner, _, _ := s.callContext(bg, b, nil); owner != testOwner("b") {
		t.Errorf("tied to b's call by the transport: %v", owner)
	}
	s.untrackCall(b)
	if _, owner, _, amb := s.callContext(bg, b, nil); owner != nil || amb {
		t.Errorf("tied to b's call, ended since: %v %v", owner, amb)
	}
}

// A notification or request on one connection is tied only to the calls
// in flight on that connection: another connection's calls (a reconnect's,
// another owner's own) neither claim it nor make it ambiguous.
func TestCallContextCountsOnlyItsConnection(t *testing.T) {
	t.Parallel()
	s := &Server{}
	bg := context.Background()
	defer s.untrackCall(s.trackCall(&callBound{parent: bg}, &conn{id: 1}, testOwner("a"), 0))
	defer s.untrackCall(s.trackCall(&callBound{parent: bg}, &conn{id: 2}, testOwner("b"), 0))
	if got, owner, _, amb := s.callContext(withConn(bg, 1), trackedCall{}, nil); owner != testOwner("a") || amb || ConnOf(got) != 1 {
		t.Errorf("on connection 1, where only a's call is in flight: owner %v, ambiguous %v, connection %v", owner, amb, ConnOf(got))
	}
	if _, owner, _, amb := s.callContext(withConn(bg, 3), trackedCall{}, nil); owner != nil || amb {
		t.Errorf("on connection 3, where no call is in flight: owner %v, ambiguous %v", owner, amb)
	}
	if _, _, _, amb := s.callContext(bg, trackedCall{}, nil); !amb {
		t.Error("on no connection known: calls of two owners, not marked ambiguous")
	}
}

// A request comes back with the part of its owner's work that the call it
// came during was made for (RequestOn's part): the one the transport tied
// it to, else the owner's latest call's, and none once calls of several
// owners are in flight.
func TestCallContextNamesThePart(t *testing.T) {
	s := &Server{}
	bg := context.Background()
	one := &conn{id: 1}
	first := s.trackCall(&callBound{parent: bg}, one, testOwner("a"), 7)
	latest := s.trackCall(&callBound{parent: bg}, one, testOwner("a"), 0)
	if _, _, part, _ := s.callContext(bg, first, nil); part != 7 {
		t.Errorf("tied to the call of part 7: part %d", part)
	}
	if _, _, part, _ := s.callContext(bg, trackedCall{}, nil); part != 0 {
		t.Errorf("not tied, the owner's latest call of no part: part %d", part)
	}
	s.untrackCall(latest)
	if _, _, part, _ := s.callContext(bg, trackedCall{}, nil); part != 7 {
		t.Errorf("not tied, the owner's latest call of part 7: part %d", part)
	}
	defer s.untrackCall(s.trackCall(&callBound{parent: bg}, one, testOwner("b"), 9))
	if _, _, part, amb := s.callContext(bg, trackedCall{}, nil); part != 0 || !amb {
		t.Errorf("calls of two owners in flight: part %d, ambiguous %v", part, amb)
	}
	s.untrackCall(first)
	if _, _, part, _ := s.callContext(bg, first, nil); part != 7 {
		t.Errorf("tied to the call of part 7, ended since: part %d", part)
	}
}
