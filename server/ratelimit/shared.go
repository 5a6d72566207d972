package ratelimit

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// sharedTake charges a call to the bucket key in the store every replica
// shares (store: postgres://...), so that a rule's rate per hub, profile,
// user or caller holds across replicas: one atomic statement per call.
// A per-session bucket is in the store too when the session is a
// Streamable HTTP one: its sealed Mcp-Session-Id lets any replica serve
// its next request (behind a round-robin balancer, each request another
// replica), so a rate counted per replica would let a session make
// replicas times the calls. handled is false for a session that lives on
// one replica (stdio, the shared hub's socket, legacy SSE), and when the
// store does not answer within sharedWait: the call is then counted by
// this replica alone.
func (l *Limiter) sharedTake(key rateKey, rl *config.RateLimit, anyReplica bool) (retryAfter time.Duration, ok, handled bool) {
	if l.shared == nil || (strings.HasPrefix(key.scope, "session:") && !anyReplica) {
		return 0, false, false
	}
	name, _ := json.Marshal([]string{key.group, key.rule, key.scope}) // unambiguous
	ctx, cancel := context.WithTimeout(context.Background(), SharedWait)
	defer cancel()
	tokens, ok, err := l.shared.Take(ctx, string(name), rl.Calls, rl.Period)
	if err != nil {
		return 0, false, false
	}
	if ok {
		return 0, true, true
	}
	l.mu.Lock()
	l.limited[rateRule{key.group, key.rule}]++
	l.mu.Unlock()
	return refillWait(tokens, rl.Calls, rl.Period), false, true
}

// SharedWait bounds each exchange with the shared store on a call's
// path: a store that does not answer makes the call counted here (or ask
// a person, for a grant), not hang.
const SharedWait = 5 * time.Second
