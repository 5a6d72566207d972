package relay

import (
	"sync"
	"testing"
	"time"
)

// A session whose Conn does not take its relayed answers holds up no
// other session's: each delivery runs off the dispatcher, at most
// maxAsidePerSession for one session (beyond, its own are dropped and
// counted), while another session's go through at once.
func TestRelayAsideBounded(t *testing.T) {
	r := &Relay{}
	slow, other := &Stream{}, &Stream{}
	release := make(chan struct{})
	var stuck sync.WaitGroup
	for i := range maxAsidePerSession {
		stuck.Add(1)
		if !r.aside(slow, func() { stuck.Done(); <-release }) {
			t.Fatalf("delivery %d of the slow session refused", i+1)
		}
	}
	stuck.Wait()
	if r.aside(slow, func() { t.Error("a delivery over the session's bound ran") }) {
		t.Error("a delivery over the session's bound was taken")
	}
	if r.lost.Load() != 1 {
		t.Errorf("lost %d, want 1", r.lost.Load())
	}
	done := make(chan struct{})
	if !r.aside(other, func() { close(done) }) {
		t.Fatal("another session's delivery refused")
	}
	select {
	case <-done:
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("another session's delivery waited for the slow one's")
	}
	close(release)
	r.wg.Wait()
	if len(r.asides) != 0 || r.asideN != 0 {
		t.Errorf("left counted: %v %d", r.asides, r.asideN)
	}
}
