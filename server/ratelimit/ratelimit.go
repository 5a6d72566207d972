// Package ratelimit is the loop guards' stage of the call chain: a
// policy rule's rate (rate: N/period, per session, profile, user or hub)
// charged on a token bucket per rule and scope, in memory or, with
// store:, in the store every replica shares; a call over it is denied
// (then: deny) or put to a person (then: prompt).
package ratelimit

import (
	"cmp"
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
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

// Limiter keeps the loop guards' counters, in memory, on the hub (not
// its snapshot): a reload keeps them for every rule whose identity and
// rate are unchanged (see Retain).
type Limiter struct {
	Now func() time.Time // time.Now; tests move it
	max int              // maxRateBuckets; tests lower it
	// shared counts every scope but the session's of a session that
	// lives on one replica in the store every replica shares
	// (shared.go); nil: here.
	shared shared.Limiter

	mu        sync.Mutex // guards the fields below
	buckets   map[rateKey]*rateBucket
	lru       *list.List // of *rateBucket, the most recently used at the front
	bySession map[string]map[rateKey]struct{}
	limited   map[rateRule]uint64 // calls over the limit, ever
	evictions uint64              // buckets dropped to make room, ever
}

// New is a Limiter with no counters. shared is the store every replica
// shares, nil for none.
func New(shared shared.Limiter) *Limiter {
	return &Limiter{Now: time.Now, max: maxRateBuckets, shared: shared, buckets: map[rateKey]*rateBucket{}, lru: list.New(),
		bySession: map[string]map[rateKey]struct{}{}, limited: map[rateRule]uint64{}}
}

// scopeKey is whose calls count together for rl: the session's own, its
// profile's (sessions without one share ""), or the whole hub's. A
// 2026-07-28 request over HTTP without Mcp-Session-Id has a session of
// its own that ends with it: its "session" is its credential, as for the
// requestState it is given (see caller), or every such request would
// count afresh.
func scopeKey(rl *config.RateLimit, sess call.Session, profile string) string {
	switch {
	case rl.Per == config.RatePerHub:
		return "hub"
	case rl.Per == config.RatePerProfile:
		return "profile:" + profile
	case rl.Per == config.RatePerUser:
		return "user:" + sess.UserKey()
	case sess.Sessionless():
		return "caller:" + sess.Caller()
	}
	return "session:" + sess.ID()
}

// Take charges the call d decided, by sess seeing profile, to its rule's
// bucket. ok is false when the bucket is empty: the call is over the
// limit, and retryAfter is when the next token comes.
func (l *Limiter) Take(d policy.Decision, sess call.Session, profile string) (retryAfter time.Duration, ok bool) {
	rl := d.Rate
	if rl == nil {
		return 0, true
	}
	key := rateKey{group: d.RuleGroup, rule: d.Rule, scope: scopeKey(rl, sess, profile)}
	if after, ok, handled := l.sharedTake(key, rl, sess.Transport() == "streamable-http"); handled {
		return after, ok
	}
	now := l.Now()
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
		if id := sess.ID(); rl.Per == config.RatePerSession && !sess.Sessionless() { // a caller's outlives its sessions
			b.session = id
			if l.bySession[id] == nil {
				l.bySession[id] = map[rateKey]struct{}{}
			}
			l.bySession[id][key] = struct{}{}
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
func (l *Limiter) remove(b *rateBucket) {
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

// ForgetSession drops the per-session buckets of the session id, which
// has ended.
func (l *Limiter) ForgetSession(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for key := range l.bySession[id] {
		if b := l.buckets[key]; b != nil {
			l.remove(b)
		}
	}
	delete(l.bySession, id)
}

// Retain keeps, after a reload to cfg, the buckets of the rules cfg still
// has with the same rate (by group and name), and drops the others.
func (l *Limiter) Retain(cfg *config.Config) {
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

// Limited is how many calls each rule's rate limit found over it since
// New, by the rule's group ("" for a global rule) and then its name:
// counters that never go down, for /metrics.
func (l *Limiter) Limited() map[string]map[string]uint64 {
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

// Buckets is how many loop-guard counters l keeps now, and how many it
// dropped to stay within maxRateBuckets since New, for /metrics.
func (l *Limiter) Buckets() (buckets int, evictions uint64) {
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

// Stage charges a call to its rule's rate, if it has one, and turns a
// call over it into going ahead (as the rule's action says) or the
// answer the client gets (overLimit). It runs after the policy stage has
// decided the call, before the decision is enforced.
type Stage struct {
	Limiter *Limiter
	// Asker puts a call over its rate to a person (then: prompt).
	Asker call.Asker
	// Answers reports whether c is the 2026-07-28 retry that answers the
	// question its rate put: it is read as the question was asked.
	Answers func(c *call.Call) bool
	Logger  *slog.Logger
}

// Handle charges c, then passes it on or answers it. A 2026-07-28
// client's retry of a call (with a requestState the hub checks before
// anything is sent) resumes the call already counted, and is not counted
// again.
func (s *Stage) Handle(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	d := c.Decision
	var over *rateOver
	if d.Rate != nil && !resumes(c) {
		if after, ok := s.Limiter.Take(d, c.Session, c.Profile); !ok {
			over = &rateOver{limit: d.Rate, retryAfter: after}
		}
	}
	if over == nil && d.Rate != nil && d.Rate.Then == config.ActionPrompt && s.Answers(c) {
		over = &rateOver{limit: d.Rate}
	}
	if over != nil {
		c.Notes.Verdict = call.DecisionRateLimited
		if err := s.overLimit(ctx, c, over); err != nil {
			return call.AnswerWith(err)
		}
		if d.Action == config.ActionPrompt {
			c.Decision.Action = config.ActionAllow // approved just now: not asked twice
		}
	}
	return next.Handle(ctx, c)
}

// resumes reports whether c is the retry of a 2026-07-28 call that the
// upstream stage resumes (and checks) rather than starts.
func resumes(c *call.Call) bool {
	if !c.Modern || c.Task { // every method of a Call may be answered input_required
		return false
	}
	_, retry := jsonrpc.StringValue(c.Request.Field("requestState")) // read here, the one stage that asks
	return retry
}

// overLimit turns c, over its rule's rate, into nil (go ahead, as the
// rule's action says) or the error the client gets: with then: deny a
// -32001 like a policy block, whose data has action "rate" and
// retryAfter (seconds); with then: prompt the question a prompt rule
// asks, which only an accept answers.
func (s *Stage) overLimit(ctx context.Context, c *call.Call, o *rateOver) error {
	d := c.Decision
	rule := cmp.Or(d.Rule, "policy_default")
	msg := o.message(rule)
	if o.limit.Then == config.ActionPrompt {
		asked := d
		asked.Description = msg
		err := s.Asker.Ask(ctx, c, asked)
		if err == nil {
			s.Logger.Info("policy: over the rate limit, approved", "rule", d.Rule, "name", c.Name)
			return nil
		}
		if call.IsAnswer(err) {
			return err // a 2026-07-28 client is asked in an input_required answer
		}
		s.Logger.Info("policy: over the rate limit, not approved, call denied", "rule", d.Rule, "name", c.Name, "why", err)
		msg += " (" + err.Error() + ")"
	} else {
		s.Logger.Info("policy: over the rate limit, call denied", "rule", d.Rule, "name", c.Name, "retry_after", o.retryAfter)
	}
	return &jsonrpc.Error{Code: call.CodeBlocked, Message: msg, Data: map[string]any{"rule": rule, "action": "rate", "retryAfter": o.seconds()}}
}
