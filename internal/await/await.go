// Package await is how the tests wait for what they can only poll (a
// state, a count, a process gone): looks that back off, under a deadline
// that bounds a hang, never a sleep that guesses how long an event takes.
package await

import (
	"testing"
	"time"
)

// Slow scales the tests' deadlines to a slow machine: a waiter returns as
// soon as its event comes, so a long deadline costs a passing test
// nothing, and a busy machine (the suite beside a second copy of itself
// on two cores: .ci/stress) must not fail a test that waits for an event.
const Slow = 5

// For polls cond until it holds, failing t once d (times Slow) has
// passed. The pause between looks doubles from 1 ms up to 50 ms: a look
// may be costly (some dump every goroutine's stack, which stops the
// world), and looks every few milliseconds under load could starve what
// the test waits for.
func For(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	poll(t, d, what, time.Millisecond, 50*time.Millisecond, cond)
}

// Costly is For of a cond that asks another process (a request to a
// race-built hub, a look at a child's state): the pause doubles from
// 20 ms up to 100 ms, as dozens of tests wait at once for node servers
// that take seconds to start on the same two cores.
func Costly(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	poll(t, d, what, 20*time.Millisecond, 100*time.Millisecond, cond)
}

func poll(t testing.TB, d time.Duration, what string, pause, most time.Duration, cond func() bool) {
	t.Helper()
	d *= Slow
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(pause)
		pause = min(2*pause, most)
	}
}
