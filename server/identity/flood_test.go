package identity

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A flood of guessed opaque tokens (refused, each kept for cache_ttl)
// does not push out the answers of the team's real tokens: a refusal
// makes room by dropping another refusal, never an identity, so a user's
// next call costs the issuer no request.
func TestIntrospectionFloodKeepsIdentities(t *testing.T) {
	is := newIntrospectingIssuer(t)
	// The clock stands still: what is checked is room, not time (a flood
	// that took 90 s on a machine running the suite twice let the users'
	// answers expire).
	start := time.Now()
	v := newIntrospectingVerifier(is, config.AuthIntrospection{URL: is.srv.URL + "/introspect"}, func() time.Time { return start })
	// A smaller room than MaxIntrospectionCache is filled and flooded
	// the same way, for a sixteenth of the requests (3,000 cost seconds
	// of CPU under -race).
	v.in.max = 64
	ctx := context.Background()
	for i := range 20 {
		is.issue(fmt.Sprint("user-token-", i), fmt.Sprint("user", i), nil)
		if _, err := v.Verify(ctx, fmt.Sprint("user-token-", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 * v.in.max {
		v.Verify(ctx, fmt.Sprint("guess-", i))
	}
	before := is.calls.Load()
	for i := range 20 {
		if _, err := v.Verify(ctx, fmt.Sprint("user-token-", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := is.calls.Load() - before; n != 0 {
		t.Errorf("after a flood of %d guesses, 20 users' tokens were introspected %d times again, want 0", 3*v.in.max, n)
	}
	v.in.mu.Lock()
	defer v.in.mu.Unlock()
	if len(v.in.cache) > v.in.max {
		t.Errorf("%d answers kept, want at most %d", len(v.in.cache), v.in.max)
	}
}
