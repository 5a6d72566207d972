package ratelimit

import (
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/identity"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// With store:, a Streamable HTTP session's own rate (per: session) is
// counted on the database: behind a round-robin balancer each of its
// requests may reach another replica, and counted per replica it would
// let the session make replicas times the calls. A session that lives on
// one replica (stdio, the shared hub's socket) is counted there alone.
func TestSessionRateOfHTTPSessionSharedByReplicas(t *testing.T) {
	a, b := sharedRateReplicas(t)
	d := policy.Decision{RuleGroup: "g", Rule: "r", Rate: &config.RateLimit{Calls: 2, Period: time.Minute, Text: "2/minute", Per: config.RatePerSession}}

	hs := &fakeSession{id: "sealed-nonce", transport: "streamable-http"}
	for i, l := range []*Limiter{a, b} {
		if _, ok := l.Take(d, hs, ""); !ok {
			t.Fatalf("the HTTP session's call %d: refused", i+1)
		}
	}
	for i, l := range []*Limiter{a, b} {
		after, ok := l.Take(d, hs, "")
		if ok || after <= 0 || after > time.Minute {
			t.Errorf("the HTTP session's call %d over 2/minute on replica %d: ok %v, retry after %v", 3+i, i, ok, after)
		}
	}

	ss := &fakeSession{id: "stdio-1", transport: "stdio"}
	for _, l := range []*Limiter{a, a, b, b} { // each replica's own 2
		if _, ok := l.Take(d, ss, ""); !ok {
			t.Fatal("a stdio session's call within its replica's count: refused")
		}
	}
	if _, ok := a.Take(d, ss, ""); ok {
		t.Error("a stdio session's third call on one replica: let through")
	}
}

// With store:, a per: user rate counts the user's calls on every replica
// together, whichever of their sessions (and transports) makes them:
// alice's two calls on two replicas use up her 2/minute on both, and
// bob's count is his own.
func TestUserRateSharedByReplicas(t *testing.T) {
	a, b := sharedRateReplicas(t)
	d := policy.Decision{RuleGroup: "g", Rule: "r", Rate: &config.RateLimit{Calls: 2, Period: time.Minute, Text: "2/minute", Per: config.RatePerUser}}
	caller := func(id, transport, subject string) *fakeSession {
		return &fakeSession{id: id, transport: transport, user: (&identity.Identity{Kind: identity.KindJWT, Subject: subject}).Key()}
	}
	alice1, alice2 := caller("alice-on-a", "streamable-http", "alice"), caller("alice-on-b", "sse", "alice")
	if _, ok := a.Take(d, alice1, ""); !ok {
		t.Fatal("alice's first call, on a: refused")
	}
	if _, ok := b.Take(d, alice2, ""); !ok {
		t.Fatal("alice's second call, on b in another session: refused")
	}
	for i, c := range []struct {
		l *Limiter
		s *fakeSession
	}{{a, alice2}, {b, alice1}} {
		if after, ok := c.l.Take(d, c.s, ""); ok || after <= 0 || after > time.Minute {
			t.Errorf("alice's call %d over 2/minute: ok %v, retry after %v", 3+i, ok, after)
		}
	}
	bob := caller("bob-on-b", "streamable-http", "bob")
	if _, ok := b.Take(d, bob, ""); !ok {
		t.Error("bob's first call: refused (alice's count is not his)")
	}
}

// sharedRateReplicas are the rate limiters of two replicas on one store,
// a test cluster of its own.
func sharedRateReplicas(t *testing.T) (a, b *Limiter) {
	url := pgtest.Start(t)
	replica := func() *Limiter {
		db, err := pgstore.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		l := New(db)
		return l
	}
	return replica(), replica()
}
