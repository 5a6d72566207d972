package pgstore

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgtest"
)

// publishUntilHeard publishes mark on channel until heard brings it: the
// subscriber listens, and has taken what was published before it.
func publishUntilHeard(t *testing.T, pub *Store, channel string, heard <-chan string, mark string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		_ = pub.Publish(t.Context(), channel, mark) // one that fails is tried again
		select {
		case got := <-heard:
			if got == mark {
				return
			}
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%q not heard", mark)
		}
	}
}

// A flood of notifications that reaches a subscriber's connection while it
// reads a large payload's row (which it does on that connection) is not
// queued whole: beyond the bound the rest are dropped and the subscriber
// told, as after a reconnection (""), so that it reads what it missed
// from the store. The flood's notifications arrive together (one
// transaction), so they are on the connection before the row's answer
// unless the server sends them late; a round where it did is tried again.
func TestSubscribeFloodWhileReadingARowBounded(t *testing.T) {
	url := pgtest.Start(t)
	s, pub := open(t, url), open(t, url)
	const flood = 5000
	last := strconv.Itoa(flood)
	ctx, stop := context.WithCancel(t.Context())
	entered, release := make(chan struct{}), make(chan struct{})
	heard, resynced, lastHeard := make(chan string, 1), make(chan struct{}, 1), make(chan struct{}, 1)
	signal := func(c chan struct{}) {
		select {
		case c <- struct{}{}:
		default:
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		s.Subscribe(ctx, "flood", func(p string) {
			switch {
			case p == "gate": // holds the listener, so that what follows waits on its connection
				select {
				case entered <- struct{}{}:
				case <-ctx.Done():
					return
				}
				select {
				case <-release:
				case <-ctx.Done():
				}
			case p == "":
				signal(resynced)
			case p == last:
				signal(lastHeard)
			case strings.HasPrefix(p, "mark"):
				select {
				case heard <- p:
				default:
				}
			}
		})
	})
	defer func() { stop(); wg.Wait() }()
	hear := func(mark string) { t.Helper(); publishUntilHeard(t, pub, "flood", heard, mark) }
	within := func(c <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-c:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: not within 30 s", what)
		}
	}
	hear("mark-listening")
	select { // the resync of the first LISTEN, before the mark
	case <-resynced:
	default:
	}
	for round := range 3 {
		if err := pub.Publish(t.Context(), "flood", "gate"); err != nil {
			t.Fatal(err)
		}
		within(entered, "the gate")
		// A payload too large for a NOTIFY: the subscriber reads its row
		// on its connection, behind the flood that follows it.
		if err := pub.Publish(t.Context(), "flood", strings.Repeat("x", maxNotify)); err != nil {
			t.Fatal(err)
		}
		if _, err := pub.pool.Exec(t.Context(), `SELECT pg_notify('flood', '=' || g::text) FROM generate_series(1, $1::int) g`, flood); err != nil {
			t.Fatal(err)
		}
		release <- struct{}{}
		select {
		case <-resynced:
			// Dropped, and told: what was kept comes before the mark.
			t.Logf("dropped and told in round %d", round)
			hear("mark-after-" + strconv.Itoa(round))
			select {
			case <-lastHeard:
				t.Errorf("all %d notifications of the flood were heard, and a resync too", flood)
			default:
			}
			return
		case <-lastHeard:
			hear("mark-round-" + strconv.Itoa(round)) // the flood came after the row: again
		case <-time.After(30 * time.Second):
			t.Fatal("neither the flood's last notification nor a resync within 30 s")
		}
	}
	t.Fatalf("in each of 3 rounds the %d notifications that came while the subscriber read a row were all kept (none dropped, no resync)", flood)
}

// What was published before a subscriber's first LISTEN (another replica's
// answer in the milliseconds before a fresh replica listens) was not heard:
// the subscriber is told ("") once its LISTEN is in place, before anything
// published after, so that it reads what it may have missed; as after a
// reconnection.
func TestSubscribeResyncsAtFirstListen(t *testing.T) {
	url := pgtest.Start(t)
	s, pub := open(t, url), open(t, url)
	ctx, stop := context.WithCancel(t.Context())
	var mu sync.Mutex
	var got []string
	heard := make(chan string, 64)
	var wg sync.WaitGroup
	wg.Go(func() {
		s.Subscribe(ctx, "first", func(p string) {
			mu.Lock()
			got = append(got, p)
			mu.Unlock()
			heard <- p
		})
	})
	defer func() { stop(); wg.Wait() }()
	publishUntilHeard(t, pub, "first", heard, "mark")
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[0] != "" {
		t.Fatalf("heard %q: want the resync (\"\") first, before anything published once listening", got)
	}
}
