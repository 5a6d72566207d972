package rounds

import (
	"fmt"
	"testing"
	"time"
)

// Questions waiting for their answer are bounded: past a caller's share
// its call is denied while another caller is still asked; past
// maxPromptRounds every call is denied; those expired make room.
func TestPromptRoundsBounded(t *testing.T) {
	r := newPromptRounds()
	now := time.Now()
	for i := range maxPromptRoundsPerCaller {
		if !r.put(fmt.Sprint("flood-", i), "flooder", "", now.Add(time.Minute), now) {
			t.Fatalf("refused at %d", i)
		}
	}
	if r.put("flood-more", "flooder", "", now.Add(time.Minute), now) {
		t.Fatal("one caller took more than its share")
	}
	for i := maxPromptRoundsPerCaller; i < maxPromptRounds; i++ {
		if !r.put(fmt.Sprint("other-", i), fmt.Sprint("caller-", i%32), "", now.Add(time.Minute), now) {
			t.Fatalf("another caller refused at %d", i)
		}
	}
	if r.put("one more", "newcomer", "", now.Add(time.Minute), now) {
		t.Fatal("took one more than maxPromptRounds")
	}
	if !r.put("later", "newcomer", "", now.Add(3*time.Minute), now.Add(2*time.Minute)) {
		t.Fatal("the expired ones made no room")
	}
	if !r.take("later") || r.take("later") {
		t.Error("take is not once")
	}
}

// One HTTP credential's sessions together get a share of the open
// questions: past it a new session of that credential is refused while
// another credential, and a client without one, is still asked.
func TestPromptRoundsPerCredential(t *testing.T) {
	r := newPromptRounds()
	now, exp := time.Now(), time.Now().Add(time.Minute)
	for i := range maxPromptRoundsPerCredential {
		who := fmt.Sprint("session a-", i/maxPromptRoundsPerCaller)
		if !r.put(fmt.Sprint("a-", i), who, "alice", exp, now) {
			t.Fatalf("refused at %d", i)
		}
	}
	if r.put("a-more", "session a-new", "alice", exp, now) {
		t.Error("a new session of a credential took more than the credential's share")
	}
	if !r.put("b-1", "session b-1", "bob", exp, now) {
		t.Error("another credential refused")
	}
	if !r.put("s-1", "session s-1", "", exp, now) {
		t.Error("a client without a credential refused")
	}
	if !r.take("a-0") || !r.put("a-more", "session a-new", "alice", exp, now) {
		t.Error("a question answered makes room in the credential's share")
	}
}
