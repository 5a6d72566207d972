package upstream

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

func TestScheduleBacksOffThenReconnectsPeriodically(t *testing.T) {
	s := newSchedule(config.Retry{Attempts: 3, InitialInterval: time.Second, ReconnectInterval: 30 * time.Second})
	within := func(d, want time.Duration, spread float64) bool {
		return float64(d) >= float64(want)*(1-spread) && float64(d) <= float64(want)*(1+spread)
	}
	// Three attempts: waits of about 1s and 2s between them ...
	for i, want := range []time.Duration{time.Second, 2 * time.Second} {
		if d := s.NextBackOff(); !within(d, want, 0.25) {
			t.Errorf("wait %d = %s, want about %s", i+1, d, want)
		}
	}
	// ... then every 30s, never stopping.
	for i := range 5 {
		if d := s.NextBackOff(); !within(d, 30*time.Second, 0.1) {
			t.Errorf("reconnect wait %d = %s, want about 30s", i+1, d)
		}
	}
	s.Reset()
	if d := s.NextBackOff(); !within(d, time.Second, 0.25) {
		t.Errorf("after Reset the wait is %s", d)
	}
}

// The schedule drives backoff's retry loop on the clock: tried at once,
// then after about 1 s and 2 s, then every 30 s. In a synctest bubble the
// minutes of waiting take no time.
func TestRetryLoopWaitsOnTheSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sched := newSchedule(config.Retry{Attempts: 3, InitialInterval: time.Second, ReconnectInterval: 30 * time.Second})
		start := time.Now()
		var at []time.Duration
		err := backoff.Retry(func() error {
			at = append(at, time.Since(start))
			if len(at) < 6 {
				return errors.New("not yet")
			}
			return nil
		}, backoff.WithContext(sched, t.Context()))
		if err != nil {
			t.Fatal(err)
		}
		want := []time.Duration{0, time.Second, 3 * time.Second, 33 * time.Second, 63 * time.Second, 93 * time.Second}
		for i := range want {
			if d := at[i] - want[i]; d < -want[i]/4-time.Second/2 || d > want[i]/4+time.Second/2 {
				t.Errorf("try %d at %s, want about %s (all: %v)", i+1, at[i], want[i], at)
			}
		}
	})
}
