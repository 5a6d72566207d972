package server

import (
	"cmp"
	"container/list"
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// maxRateBuckets bounds the counters the loop guards keep: one per rule
// with a rate and per scope (session, profile or the hub) that called it.
// At the cap the least recently used is dropped (and counted), which can
// only let its caller through sooner, never refuse anyone.
const maxRateBuckets = 10000

// rateKey names a bucket: the rule's identity (its group, "" for a
// global rule, and name) and whose calls it counts (see scopeKey).
type rateKey struct {
	group, rule string
	scope       string
}

// rateRule is a rule's identity, the label of its count of calls over
// the limit.
type rateRule struct{ group, rule string }

// rateBucket is a token bucket: it holds up to calls tokens, refilled at
// calls per period, continuously; a call takes one.
type rateBucket struct {
	key     rateKey
	calls   int
	period  time.Duration
	tokens  float64
	last    time.Time // when tokens was last brought up to date
	session string    // the session a per-session bucket belongs to, else ""
	elem    *list.Element
}

// refill brings b's tokens up to now.
func (b *rateBucket) refill(now time.Time) {
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = math.Min(float64(b.calls), b.tokens+float64(elapsed)*float64(b.calls)/float64(b.period))
	}
	b.last = now
}

// rateLimiter keeps the loop guards' counters, in memory, on the hub
// (not its snapshot): a reload keeps them for every rule whose identity
// and rate are unchanged (see retain).
type rateLimiter struct {
	now func() time.Time // time.Now; tests move it
	max int              // maxRateBuckets; tests lower it
	// shared counts every scope but the session's of a session that
	// lives on one replica in the store every replica shares
	// (sharedrate.go); nil: here.
	shared shared.Store

	mu        sync.Mutex // guards the fields below
	buckets   map[rateKey]*rateBucket
	lru       *list.List // of *rateBucket, the most recently used at the front
	bySession map[string]map[rateKey]struct{}
	limited   map[rateRule]uint64 // calls over the limit, ever
	evictions uint64              // buckets dropped to make room, ever
}

func newRateLimiter() *rateLimiter {
	return &rateLimiter{now: time.Now, max: maxRateBuckets, buckets: map[rateKey]*rateBucket{}, lru: list.New(),
		bySession: map[string]map[rateKey]struct{}{}, limited: map[rateRule]uint64{}}
}

// scopeKey is whose calls count together for rl: the session's own, its
// profile's (sessions without one share ""), or the whole hub's. A
// 2026-07-28 request over HTTP without Mcp-Session-Id has a session of
// its own that ends with it: its "session" is its credential, as for the
// requestState it is given (see caller), or every such request would
// count afresh.
func scopeKey(rl *config.RateLimit, sess *session, profile string) string {
	switch {
	case rl.Per == config.RatePerHub:
		return "hub"
	case rl.Per == config.RatePerProfile:
		return "profile:" + profile
	case rl.Per == config.RatePerUser:
		return "user:" + sess.who.Key()
	case sessionless(sess):
		return "caller:" + caller(sess)
	}
	return "session:" + sess.id
}

// take charges the call d decided, by sess seeing profile, to its rule's bucket. ok is
// false when the bucket is empty: the call is over the limit, and
// retryAfter is when the next token comes.
func (l *rateLimiter) take(d policy.Decision, sess *session, profile string) (retryAfter time.Duration, ok bool) {
	rl := d.Rate
	if rl == nil {
		return 0, true
	}
	key := rateKey{group: d.RuleGroup, rule: d.Rule, scope: scopeKey(rl, sess, profile)}
	if after, ok, handled := l.sharedTake(key, rl, sess.transport == "streamable-http"); handled {
		return after, ok
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b != nil && (b.calls != rl.Calls || b.period != rl.Period) {
		l.remove(b) // the rule's rate changed: count afresh
		b = nil
	}
	if b == nil {
		for len(l.buckets) >= l.max {
			l.remove(l.lru.Back().Value.(*rateBucket))
			l.evictions++
		}
		b = &rateBucket{key: key, calls: rl.Calls, period: rl.Period, tokens: float64(rl.Calls), last: now}
		b.elem = l.lru.PushFront(b)
		l.buckets[key] = b
		if rl.Per == config.RatePerSession && !sessionless(sess) { // a caller's outlives its sessions
			b.session = sess.id
			if l.bySession[sess.id] == nil {
				l.bySession[sess.id] = map[rateKey]struct{}{}
			}
			l.bySession[sess.id][key] = struct{}{}
		}
	} else {
		l.lru.MoveToFront(b.elem)
		b.refill(now)
	}
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	l.limited[rateRule{d.RuleGroup, d.Rule}]++
	return refillWait(b.tokens, b.calls, b.period), false
}

// refillWait is how long a bucket of calls per period that holds tokens
// (fewer than one) takes to hold one.
func refillWait(tokens float64, calls int, period time.Duration) time.Duration {
	return time.Duration(math.Ceil((1 - tokens) * float64(period) / float64(calls)))
}

// remove forgets b; l.mu is held.
func (l *rateLimiter) remove(b *rateBucket) {
	delete(l.buckets, b.key)
	l.lru.Remove(b.elem)
	if b.session != "" {
		if keys := l.bySession[b.session]; keys != nil {
			delete(keys, b.key)
			if len(keys) == 0 {
				delete(l.bySession, b.session)
			}
		}
	}
}

// forgetSession drops the per-session buckets of the session id, which
// has ended.
func (l *rateLimiter) forgetSession(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for key := range l.bySession[id] {
		if b := l.buckets[key]; b != nil {
			l.remove(b)
		}
	}
	delete(l.bySession, id)
}

// retain keeps, after a reload to cfg, the buckets of the rules cfg still
// has with the same rate (by group and name), and drops the others.
func (l *rateLimiter) retain(cfg *config.Config) {
	rates := map[rateRule]*config.RateLimit{}
	for _, g := range cfg.Groups {
		for _, r := range g.Policy {
			if r.Rate != nil {
				rates[rateRule{g.Name, r.Name}] = r.Rate
			}
		}
	}
	for _, r := range cfg.Policy {
		if r.Rate != nil {
			rates[rateRule{"", r.Name}] = r.Rate
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for key, b := range l.buckets {
		rl := rates[rateRule{key.group, key.rule}]
		if rl == nil || rl.Calls != b.calls || rl.Period != b.period || scopeOf(key.scope) != rl.Per {
			l.remove(b)
		}
	}
}

// scopeOf is the scope a bucket's scope key was made for.
func scopeOf(key string) config.RateScope {
	switch {
	case key == "hub":
		return config.RatePerHub
	case strings.HasPrefix(key, "profile:"):
		return config.RatePerProfile
	case strings.HasPrefix(key, "user:"):
		return config.RatePerUser
	}
	return config.RatePerSession
}

// RateLimited is how many calls each rule's rate limit found over it
// since New, by the rule's group ("" for a global rule) and then its
// name: counters that never go down, for /metrics.
func (h *Hub) RateLimited() map[string]map[string]uint64 {
	l := h.rates
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]map[string]uint64{}
	for r, n := range l.limited {
		if out[r.group] == nil {
			out[r.group] = map[string]uint64{}
		}
		out[r.group][r.rule] = n
	}
	return out
}

// RateBuckets is how many loop-guard counters the hub keeps now, and how
// many it dropped to stay within maxRateBuckets since New, for /metrics.
func (h *Hub) RateBuckets() (buckets int, evictions uint64) {
	l := h.rates
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets), l.evictions
}

// rateOver is a call over its rule's rate limit.
type rateOver struct {
	limit      *config.RateLimit
	retryAfter time.Duration
}

// seconds is retryAfter in whole seconds, rounded up, at least 1.
func (o *rateOver) seconds() int {
	return max(1, int(math.Ceil(o.retryAfter.Seconds())))
}

// message says which limit the call is over, and when to retry.
func (o *rateOver) message(rule string) string {
	return fmt.Sprintf("Rate limit %s per %s of rule %s exceeded; retry after %ds", o.limit.Text, o.limit.Per, rule, o.seconds())
}

// limit charges the call c that d decided to its rule's rate, if it has
// one, and returns how it is over the limit; nil when it is within it.
// A 2026-07-28 client's retry of a call (with a requestState the hub
// checks before anything is sent: see modernCall) resumes the call
// already counted, and is not counted again.
func (h *Hub) limit(req *request, c call, d policy.Decision) *rateOver {
	if d.Rate == nil || resumes(req, c) {
		return nil
	}
	after, ok := h.rates.take(d, req.sess, req.sess.profileName(req.snap.cfg))
	if ok {
		return nil
	}
	return &rateOver{limit: d.Rate, retryAfter: after}
}

// resumes reports whether c is the retry of a 2026-07-28 call that
// modernCall resumes (and checks) rather than starts.
func resumes(req *request, c call) bool {
	if !req.modern || !inputMethod(c.method) || c.params.Field("task") != nil {
		return false
	}
	_, ok := req.stringField("requestState")
	return ok
}

// overLimit turns a call over its rule's rate into nil (go ahead, as the
// rule's action says) or the error the client gets: with then: deny a
// -32001 like a policy block, whose data has action "rate" and
// retryAfter (seconds); with then: prompt the question a prompt rule
// asks, which only an accept answers.
func (h *Hub) overLimit(ctx context.Context, req *request, c call, d policy.Decision, o *rateOver) error {
	rule := cmp.Or(d.Rule, "policy_default")
	msg := o.message(rule)
	if o.limit.Then == config.ActionPrompt {
		asked := d
		asked.Description = msg
		err := h.ask(ctx, req, c, asked)
		if err == nil {
			h.logger.Info("policy: over the rate limit, approved", "rule", d.Rule, "name", c.name)
			return nil
		}
		if isRoundAnswer(err) {
			return err // a 2026-07-28 client is asked in an input_required answer
		}
		h.logger.Info("policy: over the rate limit, not approved, call denied", "rule", d.Rule, "name", c.name, "why", err)
		msg += " (" + err.Error() + ")"
	} else {
		h.logger.Info("policy: over the rate limit, call denied", "rule", d.Rule, "name", c.name, "retry_after", o.retryAfter)
	}
	return &rpcError{Code: codePolicyBlocked, Message: msg, Data: map[string]any{"rule": rule, "action": "rate", "retryAfter": o.seconds()}}
}

// decisionRateLimited is the audit record's decision, and the traffic's
// action, for a call over its rule's rate limit (whether then: prompt let
// it through is its outcome).
const decisionRateLimited = "rate_limited"
