package signin

import (
	"fmt"
	"testing"
	"time"
)

// One user whose calls keep asking to sign in pushes out only their own
// oldest links: another user's pending link stays.
func TestSignInsBoundedPerUser(t *testing.T) {
	var p signIns
	exp := time.Now().Add(signInTTL)
	p.put("bob-link", &signInEntry{user: "bob", expires: exp})
	for i := range maxSignIns {
		p.put(fmt.Sprint("alice-", i), &signInEntry{user: "alice", expires: exp.Add(time.Duration(i) * time.Millisecond)})
	}
	if p.entries["bob-link"] == nil {
		t.Error("alice's links pushed out bob's")
	}
	n := 0
	for _, e := range p.entries {
		if e.user == "alice" {
			n++
		}
	}
	if n != maxUserSignIns || p.entries[fmt.Sprint("alice-", maxSignIns-1)] == nil {
		t.Errorf("alice keeps %d links (want %d, her newest among them)", n, maxUserSignIns)
	}
}
