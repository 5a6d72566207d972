package rounds

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A state presented after its expiry is refused, whatever else is right.
func TestSealedStateExpires(t *testing.T) {
	s, err := newStateSealer()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s.now = func() time.Time { return now }
	token, err := s.seal(sealedState{Round: "r", Caller: "session a", Call: "c", Expires: now.Add(time.Minute).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := s.open(token, "session a", "c"); err != nil || st.Round != "r" {
		t.Fatalf("open in time: %+v %v", st, err)
	}
	now = now.Add(time.Minute + time.Millisecond)
	if _, err := s.open(token, "session a", "c"); !errors.Is(err, ErrStateExpired) {
		t.Errorf("open after expiry: %v", err)
	}
	other, _ := newStateSealer() // another hub, or this one restarted
	if _, err := other.open(token, "session a", "c"); !errors.Is(err, ErrStateForged) {
		t.Errorf("open at another hub: %v", err)
	}
}

// Whatever a client sends as requestState, open refuses it without
// panicking unless it is a state the hub sealed, byte for byte.
func FuzzOpenState(f *testing.F) {
	s, err := newStateSealer()
	if err != nil {
		f.Fatal(err)
	}
	good, err := s.seal(sealedState{Round: "r", Caller: "c", Call: "d", Expires: time.Now().Add(time.Hour).UnixMilli()})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{good, good[:len(good)-1], "", "AAAA", strings.Repeat("A", 40), "round 1 <&>", good + "A"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		st, err := s.open(token, "c", "d")
		if err == nil && (token != good || st.Round != "r") {
			t.Fatalf("opened %q: %+v", token, st)
		}
	})
}
