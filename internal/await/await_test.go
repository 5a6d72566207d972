package await

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps what Fatalf said and ends the
// goroutine, as a test's does.
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	panic(r)
}

// run calls f with a recorder and returns what Fatalf said ("" when it
// was not called).
func run(f func(testing.TB)) string {
	r := &recorder{TB: nil}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer func() {
			if v := recover(); v != nil && v != any(r) {
				panic(v)
			}
		}()
		f(r)
	})
	wg.Wait()
	return r.fatal
}

// For returns once cond holds, looking again until then.
func TestForReturnsWhenCondHolds(t *testing.T) {
	looks := 0
	if fatal := run(func(tb testing.TB) { For(tb, time.Hour, "the third look", func() bool { looks++; return looks == 3 }) }); fatal != "" {
		t.Fatalf("failed: %s", fatal)
	}
	if looks != 3 {
		t.Errorf("%d looks, want 3", looks)
	}
}

// A cond that never holds fails the test, naming what it waited for.
func TestForFailsPastTheDeadline(t *testing.T) {
	fatal := run(func(tb testing.TB) { For(tb, time.Millisecond, "nothing", func() bool { return false }) })
	if !strings.Contains(fatal, "timed out after 5ms waiting for nothing") {
		t.Errorf("Fatalf said %q", fatal)
	}
}
