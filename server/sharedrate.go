package server

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// sharedTake charges a call to the bucket key in the store every replica
// shares (store: postgres://...), so that a rule's rate per hub, profile,
// user or caller holds across replicas: one atomic statement per call.
// handled is false for a per-session bucket (a session lives on one
// replica) and when the store does not answer within sharedWait: the
// call is then counted by this replica alone.
func (l *rateLimiter) sharedTake(key rateKey, rl *config.RateLimit) (retryAfter time.Duration, ok, handled bool) {
	if l.shared == nil || strings.HasPrefix(key.scope, "session:") {
		return 0, false, false
	}
	name, _ := json.Marshal([]string{key.group, key.rule, key.scope}) // unambiguous
	ctx, cancel := context.WithTimeout(context.Background(), sharedWait)
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
	return time.Duration(math.Ceil((1 - tokens) * float64(rl.Period) / float64(rl.Calls))), false, true
}
