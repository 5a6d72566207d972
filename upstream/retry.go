package upstream

import (
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// schedule is the backoff.BackOff of a server's retries: exponential with
// jitter from InitialInterval for the first Attempts tries, then every
// ReconnectInterval (with jitter) for as long as the hub runs.
type schedule struct {
	retry config.Retry
	exp   *backoff.ExponentialBackOff
	tries int
}

func newSchedule(r config.Retry) *schedule {
	exp := backoff.NewExponentialBackOff()
	exp.InitialInterval = r.InitialInterval
	exp.RandomizationFactor = 0.25
	exp.Multiplier = 2
	exp.MaxInterval = r.ReconnectInterval
	exp.MaxElapsedTime = 0 // never give up: the hub reconnects for as long as it runs
	exp.Reset()
	return &schedule{retry: r, exp: exp}
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
	s.tries = 0
	s.exp.Reset()
}

func jitter(d time.Duration, factor float64) time.Duration {
	return time.Duration(float64(d) * (1 - factor + 2*factor*rand.Float64()))
}
