package upstream

import (
	"testing"
	"time"

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
