package relay

import (
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// A session's relay budget: relayBurst messages at once, then relayRate
// a second; bytes up to twice the largest message, and never less than
// a resuming GET takes, however small the largest message is set.
func TestRelayBudget(t *testing.T) {
	now := time.Unix(1000, 0)
	var b relayBudget
	for i := range relayBurst {
		if !b.take(now, 10, 1<<20) {
			t.Fatalf("message %d of the burst refused", i)
		}
	}
	if b.take(now, 10, 1<<20) {
		t.Fatal("a message beyond the burst taken")
	}
	if !b.take(now.Add(time.Second/relayRate), 10, 1<<20) {
		t.Fatal("a message refused once the bucket refilled")
	}
	var small relayBudget
	for i := range 2 {
		if !small.take(now, shared.MaxEventBytes, 4096) {
			t.Fatalf("resuming GET %d refused with a small largest message", i+1)
		}
	}
	if small.take(now, shared.MaxEventBytes, 4096) {
		t.Fatal("a third resuming GET at once taken")
	}
	var big relayBudget
	for i := range 2 {
		if !big.take(now, 10<<20, 10<<20) {
			t.Fatalf("largest message %d at once refused", i+1)
		}
	}
	if big.take(now, 10<<20, 10<<20) {
		t.Fatal("a third largest message at once taken")
	}
}
