package upstream

import (
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// schedule is the backoff.BackOff of a server's retries: exponential with
// jitter from InitialInterval for the first Attempts tries, then every
// ReconnectInterval (with jitter) for as long as the hub runs. It also
// keeps the connect timeout of the next try (see timedOut).
type schedule struct {
	retry config.Retry
	exp   *backoff.ExponentialBackOff
	tries int

	configured time.Duration // the server's connect timeout
	connect    time.Duration // the next try's: configured, longer after tries that timed out
}

// Longer connect timeouts: a server slower to answer initialize than its
// connect timeout (node or npx on a slow or busy laptop, a first start
// downloading a package: seen taking 10-63 s in loaded test runs) would
// be cut off just before answering on every try, the same timeout each
// time, and never come up. So each try that timed out gives the next
// twice as long, up to maxConnectFactor times the configured timeout or
// maxConnect, whichever is less (never less than the configured one): 10s
// gives 20s, 40s, 80s; npx's 2m gives 4m, 5m. The cap keeps a server that
// hangs for good from holding a child for ever longer; once the server is
// up, Reset brings it back to the configured timeout.
const (
	maxConnectFactor = 8
	maxConnect       = 5 * time.Minute
)

// newSchedule is the schedule of a server whose connect timeout is connect.
func newSchedule(r config.Retry, connect time.Duration) *schedule {
	exp := backoff.NewExponentialBackOff()
	exp.InitialInterval = r.InitialInterval
	exp.RandomizationFactor = 0.25
	exp.Multiplier = 2
	exp.MaxInterval = r.ReconnectInterval
	exp.MaxElapsedTime = 0 // never give up: the hub reconnects for as long as it runs
	exp.Reset()
	return &schedule{retry: r, exp: exp, configured: connect, connect: connect}
}

// connectTimeout bounds the next try's start and initialize.
func (s *schedule) connectTimeout() time.Duration { return s.connect }

// timedOut notes that a try ran out of its connect timeout, within, and
// returns the next try's: twice within (see maxConnectFactor), never
// shorter than one set already. Twice what the try waited, not twice what
// the schedule holds now: tries that ran at once (the connections of
// several owners of an isolated server, dialled together) and timed out
// together are one slow start, which gives the next try twice as long,
// not 2^n times.
func (s *schedule) timedOut(within time.Duration) time.Duration {
	limit := max(s.configured, min(maxConnectFactor*s.configured, maxConnect))
	s.connect = max(s.connect, min(2*within, limit))
	return s.connect
}

// NextBackOff is the wait before the next try.
func (s *schedule) NextBackOff() time.Duration {
	s.tries++
	if s.tries < s.retry.Attempts {
		return s.exp.NextBackOff()
	}
	return jitter(s.retry.ReconnectInterval, 0.1)
}

// Reset starts the schedule over, after a server came up.
func (s *schedule) Reset() {
	s.resetBackoff()
	s.connect = s.configured
}

// resetBackoff starts the waits over and keeps the connect timeout: after
// one of the connections of an isolated server came up (see
// Server.dialIsolated).
func (s *schedule) resetBackoff() {
	s.tries = 0
	s.exp.Reset()
}

func jitter(d time.Duration, factor float64) time.Duration {
	return time.Duration(float64(d) * (1 - factor + 2*factor*rand.Float64()))
}
