package upstream

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

func TestScheduleBacksOffThenReconnectsPeriodically(t *testing.T) {
	t.Parallel()
	s := newSchedule(config.Retry{Attempts: 3, InitialInterval: time.Second, ReconnectInterval: 30 * time.Second}, 10*time.Second)
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
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		sched := newSchedule(config.Retry{Attempts: 3, InitialInterval: time.Second, ReconnectInterval: 30 * time.Second}, 10*time.Second)
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

// A server that cannot start is tried at once, then on its schedule
// (backing off from initial_interval for its attempts, then every
// reconnect_interval for as long as the hub runs), failed meanwhile with
// its reason, and Close ends its waiting at once. The minutes of waiting
// take no time in a synctest bubble, and the bubble ends only when every
// goroutine the manager started has.
func TestServerRetriesOnTheSchedule(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		cfg := fakeConfig(t, "retry: {attempts: 3, initial_interval: 1s, reconnect_interval: 30s}")
		cfg.Groups[0].Servers[0].Command = filepath.Join(t.TempDir(), "missing")
		m := New(cfg, testLogger(t))
		m.SetClientCapabilities(mcp.ClientCapabilities{})
		start := time.Now()
		m.Start(t.Context())
		s := m.Servers()[0]
		var at []time.Duration
		for seen := uint64(0); len(at) < 6; {
			<-m.Changes() // each failed try says so, and the tools of the last run read (none)
			if n := s.starts.Load(); n > seen {
				seen = n
				at = append(at, time.Since(start))
			}
		}
		want := []time.Duration{0, time.Second, 3 * time.Second, 33 * time.Second, 63 * time.Second, 93 * time.Second}
		for i := range want {
			if d := at[i] - want[i]; d < -want[i]/4-time.Second/2 || d > want[i]/4+time.Second/2 {
				t.Errorf("try %d at %s, want about %s (all: %v)", i+1, at[i], want[i], at)
			}
		}
		if st := s.Status(); st.State != StateFailed || st.Err == nil || !strings.Contains(st.Err.Error(), "missing") {
			t.Errorf("status %v: %v", st.State, st.Err)
		}
		if got := s.Restarts(); got != 5 {
			t.Errorf("%d restarts after 6 tries, want 5", got)
		}
		closed := time.Now()
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(closed); took != 0 {
			t.Errorf("Close took %s waiting for the retry", took)
		}
	})
}

// Start after Close starts nothing.
func TestStartAfterCloseStartsNothing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		cfg := fakeConfig(t, "")
		cfg.Groups[0].Servers[0].Command = filepath.Join(t.TempDir(), "missing")
		m := New(cfg, testLogger(t))
		m.SetClientCapabilities(mcp.ClientCapabilities{})
		m.Close()
		m.Start(t.Context())
		synctest.Wait()
		if n := m.Servers()[0].starts.Load(); n != 0 {
			t.Errorf("%d tries to connect after Close", n)
		}
	})
}

// A server that crashed is connected again after about initial_interval,
// not at once, and calls go to its new child. The child is real; the
// clock is the bubble's, so the minute takes no time.
func TestCrashReconnectsAfterInitialInterval(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := New(fakeConfig(t, "retry: {attempts: 2, initial_interval: 1m, reconnect_interval: 10m}, stop_grace: 1s"), testLogger(t))
		m.routeWait = 0
		m.SetClientCapabilities(mcp.ClientCapabilities{})
		m.Start(t.Context())
		defer m.Close()
		s := m.Servers()[0]
		for s.Status().State != StateReady {
			<-m.Changes()
		}
		pid := pidOf(t, s)
		crashed := time.Now()
		if _, err := s.Request(t.Context(), nil, "tools/call", map[string]any{"name": "crash"}, time.Hour); err == nil || !strings.Contains(err.Error(), "exited") {
			t.Fatalf("crash: %v", err)
		}
		for s.Status().State == StateReady {
			<-m.Changes()
		}
		for s.Status().State != StateReady {
			<-m.Changes()
		}
		if took := time.Since(crashed); took < 45*time.Second || took > 105*time.Second {
			t.Errorf("connected again %s after the crash, want about 1m", took)
		}
		if got := s.Restarts(); got != 1 {
			t.Errorf("%d restarts, want 1", got)
		}
		if got := pidOf(t, s); got == pid {
			t.Errorf("calls still go to the crashed child %d", pid)
		}
	})
}

// After a try that ran out of its connect timeout the next waits twice as
// long, up to 8x the configured timeout or 5 minutes, whichever is less
// (never less than the configured one); once the server is up it is back
// to the configured timeout.
func TestScheduleLengthensTheConnectTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		configured time.Duration
		want       []time.Duration // the first try's, then after each timeout
	}{
		{10 * time.Second, []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 80 * time.Second}},
		{2 * time.Minute, []time.Duration{2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute}},
		{10 * time.Minute, []time.Duration{10 * time.Minute, 10 * time.Minute}},
	} {
		s := newSchedule(config.Retry{Attempts: 3, InitialInterval: time.Second, ReconnectInterval: 30 * time.Second}, tc.configured)
		got := []time.Duration{s.connectTimeout()}
		for len(got) < len(tc.want) {
			got = append(got, s.timedOut(s.connectTimeout()))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("configured %s: connect timeouts %v, want %v", tc.configured, got, tc.want)
		}
		if s.Reset(); s.connectTimeout() != tc.configured {
			t.Errorf("configured %s: after Reset %s", tc.configured, s.connectTimeout())
		}
	}
}

// A server that writes a burst to stderr and exits as it starts, tried
// again and again, logs one burst in all, not one each start: the
// budget of its stderr in the log is the server's (transport.StderrBudget).
func TestCrashLoopStderrLoggedOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		cfg := fakeConfig(t, "retry: {attempts: 5, initial_interval: 1s, reconnect_interval: 30s}")
		srv := cfg.Groups[0].Servers[0]
		srv.Command, srv.Args = "sh", []string{"-c", `i=0; while [ $i -lt 1500 ]; do echo line $i; i=$((i+1)); done >&2; exit 1`}
		var logged stderrLines
		m := New(cfg, slog.New(&logged))
		m.SetClientCapabilities(mcp.ClientCapabilities{})
		start := time.Now()
		m.Start(t.Context())
		for s := m.Servers()[0]; s.starts.Load() < 4; {
			<-m.Changes() // three tries failed, their stderr read to its end
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		// One burst (1,000 short lines) and 10 a second after it.
		if n, most := logged.n.Load(), 1000+10*int64(time.Since(start).Seconds()+1); n > most {
			t.Errorf("%d stderr lines logged over three starts of 1,500 each, want at most %d", n, most)
		}
	})
}

// stderrLines counts the stderr lines logged.
type stderrLines struct{ n atomic.Int64 }

func (h *stderrLines) Enabled(context.Context, slog.Level) bool { return true }
func (h *stderrLines) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *stderrLines) WithGroup(string) slog.Handler            { return h }
func (h *stderrLines) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "stderr" {
		h.n.Add(1)
	}
	return nil
}
