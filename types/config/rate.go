package config

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// RateScope is whose calls a rule's rate limit counts together.
type RateScope string

const (
	RatePerSession RateScope = "session" // each client session on its own (the default)
	RatePerProfile RateScope = "profile" // all sessions of one profile; sessions without one share one count
	RatePerHub     RateScope = "hub"     // every session of the hub together
	RatePerUser    RateScope = "user"    // all sessions of one caller (identity: JWT subject or static token name); callers the face knows not share one count
)

// RateLimit is a policy rule's loop guard (rate: N/period): the calls the
// rule matches are counted in a token bucket that holds Calls tokens and
// refills Calls every Period, continuously; a call that finds no token is
// over the limit. Counters are kept in the hub's memory, per replica, or
// with store: on the database for every replica (server/ratelimit).
type RateLimit struct {
	Calls  int           // N: at least 1
	Period time.Duration // over which Calls calls are allowed
	Text   string        // as written, e.g. "3/minute", for messages
	// Per is whose calls count together: session (the default), profile,
	// user or hub.
	Per RateScope
	// Then is what happens to a call over the limit: ActionDeny (the
	// default) refuses it -32001 with retryAfter; ActionPrompt asks for
	// approval as a prompt rule does.
	Then Action
}

// Same reports whether r and o count alike (the same N and period): a
// reload that keeps them keeps the counters.
func (r *RateLimit) Same(o *RateLimit) bool {
	return r != nil && o != nil && r.Calls == o.Calls && r.Period == o.Period
}

// ratePeriods are the words a rate's period may be, besides a Go duration.
var ratePeriods = map[string]time.Duration{
	"second": time.Second, "s": time.Second,
	"minute": time.Minute, "m": time.Minute,
	"hour": time.Hour, "h": time.Hour,
	"day": 24 * time.Hour, "d": 24 * time.Hour,
}

// ParseRate reads "N/period": N a whole number of at least 1, period one
// of second, minute, hour, day (or s, m, h, d) or a Go duration ("10s",
// "1h30m").
func ParseRate(s string) (calls int, period time.Duration, err error) {
	n, per, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, errors.New("must be N/period, e.g. 3/minute or 10/30s")
	}
	n, per = strings.TrimSpace(n), strings.TrimSpace(per)
	calls, err = strconv.Atoi(n)
	if err != nil || calls < 1 {
		return 0, 0, fmt.Errorf("%q: N must be a whole number of at least 1", s)
	}
	if period, ok = ratePeriods[per]; ok {
		return calls, period, nil
	}
	period, err = time.ParseDuration(per)
	if err != nil || period <= 0 {
		return 0, 0, fmt.Errorf("%q: the period must be second, minute, hour, day (or s, m, h, d) or a positive duration such as 10s", s)
	}
	return calls, period, nil
}

// rateNodes are the value nodes of a rule's rate:, per: and then: keys.
type rateNodes struct{ rate, per, then *yaml.Node }

// rateLimit reads the loop guard of rule r (at key) from n; nil when it
// has none.
func (p *parser) rateLimit(n rateNodes, key string, r Rule) *RateLimit {
	if n.rate == nil {
		for _, k := range []struct {
			name string
			node *yaml.Node
		}{{"per", n.per}, {"then", n.then}} {
			if k.node != nil {
				p.fail(k.node, key+"."+k.name, "only applies with rate: (e.g. rate: 3/minute)")
			}
		}
		return nil
	}
	s, ok := p.strOK(n.rate, key+".rate")
	if !ok {
		return nil
	}
	calls, period, err := ParseRate(s)
	if err != nil {
		p.fail(n.rate, key+".rate", "%v", err)
		return nil
	}
	rl := &RateLimit{Calls: calls, Period: period, Text: strings.TrimSpace(s), Per: RatePerSession, Then: ActionDeny}
	if n.per != nil {
		choose(p, n.per, key+".per", &rl.Per, RatePerSession, RatePerProfile, RatePerHub, RatePerUser)
	}
	if n.then != nil {
		choose(p, n.then, key+".then", &rl.Then, ActionDeny, ActionPrompt)
	}
	if r.Action == ActionDeny {
		p.fail(n.rate, key+".rate", "a deny rule refuses every call it matches; rate: applies to allow, log and prompt rules")
	}
	return rl
}

// checkRateNames reports a rule with rate: whose name another rule of the
// same policy list (n, at key) has too: a rule's group and name are what
// its counters go by, across reloads.
func (p *parser) checkRateNames(n *yaml.Node, key string, rules []Rule) {
	first := map[string]int{}
	for i, r := range rules {
		j, dup := first[r.Name]
		if !dup {
			first[r.Name] = i
			continue
		}
		if r.Rate != nil || rules[j].Rate != nil {
			at := cmp.Or(findKey(n.Content[i], "name"), n.Content[i])
			p.fail(at, fmt.Sprintf("%s[%d].name", key, i), "%q names %s[%d] too: a rule with rate: needs a name of its own (its counters go by it)", r.Name, key, j)
		}
	}
}
