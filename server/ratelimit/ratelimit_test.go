package ratelimit

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// fakeSession is a call.Session: the stage reads no more of a session
// (nor the Askers' ways to reach it).
type fakeSession struct {
	call.Session
	id, transport, user string
	sessionless         bool
}

func (s *fakeSession) ID() string { return s.id }
func (s *fakeSession) Caller() string {
	if s.sessionless {
		return "credential " + s.user
	}
	return "session " + s.id
}
func (s *fakeSession) UserKey() string    { return s.user }
func (s *fakeSession) Transport() string  { return s.transport }
func (s *fakeSession) Sessionless() bool  { return s.sessionless }
func (s *fakeSession) ClientName() string { return "t" }

// rateClock is the loop guards' clock, moved by hand.
type rateClock struct{ ns atomic.Int64 }

func (c *rateClock) now() time.Time { return time.Unix(0, c.ns.Load()) }

// The counters are bounded: at the cap the least recently used goes, and
// is counted; a session's own go when it ends.
func TestRateLimiterBounded(t *testing.T) {
	l := New(nil)
	l.max = 3
	clock := &rateClock{}
	l.Now = clock.now
	d := policy.Decision{Action: config.ActionAllow, Rule: "r", RuleGroup: "g", Rate: &config.RateLimit{Calls: 1, Period: time.Minute, Per: config.RatePerSession}}
	sessions := make([]*fakeSession, 5)
	for i := range sessions {
		sessions[i] = &fakeSession{id: fmt.Sprint("s", i), transport: "test"}
		if _, ok := l.Take(d, sessions[i], ""); !ok {
			t.Fatalf("session %d's first call refused", i)
		}
	}
	if len(l.buckets) != 3 || l.evictions != 2 || len(l.bySession) != 3 {
		t.Fatalf("%d buckets, %d evictions, %d sessions indexed; want 3, 2, 3", len(l.buckets), l.evictions, len(l.bySession))
	}
	if _, ok := l.Take(d, sessions[4], ""); ok {
		t.Error("the most recent session's counter was evicted")
	}
	if _, ok := l.Take(d, sessions[0], ""); !ok {
		t.Error("an evicted counter was not dropped") // it counts afresh
	}
	l.ForgetSession("s4")
	if _, ok := l.buckets[rateKey{"g", "r", "session:s4"}]; ok || len(l.bySession["s4"]) != 0 {
		t.Error("a session that ended kept its counter")
	}
}
