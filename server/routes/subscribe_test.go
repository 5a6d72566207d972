package routes

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// wire is a fake upstream's end of the subscription messages: what it
// holds subscribed, each subscribe and unsubscribe taking effect as it
// arrives. The test may hold the next message of a method back (on its
// way: a gate it closes to let it arrive) and refuse the next subscribe.
type wire struct {
	mu     sync.Mutex
	holds  map[string]bool
	gates  map[string]chan struct{} // by method
	refuse error
	log    []string // "method uri" of each message, as it set out
}

func newWire() *wire {
	return &wire{holds: map[string]bool{}, gates: map[string]chan struct{}{}}
}

// hold keeps the next message of method on its way until the gate it
// returns is closed.
func (w *wire) hold(method string) chan struct{} {
	gate := make(chan struct{})
	w.mu.Lock()
	w.gates[method] = gate
	w.mu.Unlock()
	return gate
}

func (w *wire) arrive(method, uri string) error {
	w.mu.Lock()
	w.log = append(w.log, method+" "+uri)
	gate := w.gates[method]
	delete(w.gates, method)
	w.mu.Unlock()
	if gate != nil {
		<-gate
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case method == "resources/unsubscribe":
		delete(w.holds, uri)
	case w.refuse != nil:
		err := w.refuse
		w.refuse = nil
		return err
	default:
		w.holds[uri] = true
	}
	return nil
}

// messages is what has set out for the upstream so far.
func (w *wire) messages() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.log)
}

func (w *wire) holding(uri string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.holds[uri]
}

// wireTable is a table in front of w, its background work on goroutines
// of its own.
func wireTable(w *wire) *Table[*fake] {
	return wireTableStop(w, make(chan struct{}))
}

// wireTableStop is wireTable, closing when stop is closed.
func wireTableStop(w *wire, stop chan struct{}) *Table[*fake] {
	return New(Options[*fake]{
		Spawn:       func(f func()) bool { go f(); return true },
		Stop:        stop,
		Unsubscribe: func(_ *upstream.Server, uri string) error { return w.arrive("resources/unsubscribe", uri) },
	})
}

func wireSubscriber(w *wire, sess *fake) Subscriber[*fake] {
	s := &upstream.Server{}
	return Subscriber[*fake]{Session: sess,
		Resolve: func(context.Context, string, bool) (*upstream.Server, bool) { return s, false },
		Routed:  func(*upstream.Server, string) {},
		Subscribe: func(_ context.Context, _ *upstream.Server, uri string) error {
			return w.arrive("resources/subscribe", uri)
		},
	}
}

// twoSessions adds sessions a and b to tab.
func twoSessions(t *testing.T, tab *Table[*fake]) (a, b *fake) {
	t.Helper()
	a, b = &fake{id: "a"}, &fake{id: "b"}
	for _, s := range []*fake{a, b} {
		if err := tab.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	return a, b
}

// inBackground runs f on a goroutine of its own: its error comes on the
// channel.
func inBackground(f func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	return done
}

// The subscribes and unsubscribes a URI's sessions cause reach the
// upstream one at a time, in the order they were sent, so that once they
// are answered the upstream holds the URI exactly when a session listens
// to it: a new session's subscribe does not overtake the unsubscribe of
// those that left, and a refused first subscribe does not drop a session
// that joined while it was on its way.
func TestSubscriptionsMatchTheUpstream(t *testing.T) {
	const uri = "x://r"
	refused := errors.New("refused")
	for _, c := range []struct {
		name string
		// run drives the table with a and b, sessions of its own; the
		// error is b's answer, and b listens once it is nil.
		run func(t *testing.T, w *wire, tab *Table[*fake], a, b *fake) error
	}{
		{"every session leaves during the first subscribe, then one subscribes", func(t *testing.T, w *wire, tab *Table[*fake], a, b *fake) error {
			sending, unsubscribing := w.hold("resources/subscribe"), w.hold("resources/unsubscribe")
			first := inBackground(func() error { return tab.SubscribeURI(t.Context(), wireSubscriber(w, a), uri, true) })
			synctest.Wait() // a's subscribe is on its way
			tab.Remove(a)
			close(sending)
			synctest.Wait() // the upstream holds uri for no one: its unsubscribe is on its way
			second := inBackground(func() error { return tab.SubscribeURI(t.Context(), wireSubscriber(w, b), uri, true) })
			synctest.Wait()
			close(unsubscribing)
			if err := <-first; err != nil {
				t.Errorf("a's subscribe: %v", err)
			}
			return <-second
		}},
		{"the last session unsubscribes, and one subscribes meanwhile", func(t *testing.T, w *wire, tab *Table[*fake], a, b *fake) error {
			if err := tab.SubscribeURI(t.Context(), wireSubscriber(w, a), uri, true); err != nil {
				t.Fatal(err)
			}
			unsubscribing := w.hold("resources/unsubscribe")
			left := inBackground(func() error { return tab.SubscribeURI(t.Context(), wireSubscriber(w, a), uri, false) })
			synctest.Wait() // a's unsubscribe is on its way
			second := inBackground(func() error { return tab.SubscribeURI(t.Context(), wireSubscriber(w, b), uri, true) })
			synctest.Wait()
			close(unsubscribing)
			if err := <-left; err != nil {
				t.Errorf("a's unsubscribe: %v", err)
			}
			return <-second
		}},
		{"the first subscribe is refused after another session joined", func(t *testing.T, w *wire, tab *Table[*fake], a, b *fake) error {
			sending := w.hold("resources/subscribe")
			w.refuse = refused
			first := inBackground(func() error { return tab.SubscribeURI(t.Context(), wireSubscriber(w, a), uri, true) })
			synctest.Wait() // a's subscribe is on its way
			second := inBackground(func() error { return tab.SubscribeURI(t.Context(), wireSubscriber(w, b), uri, true) })
			synctest.Wait()
			close(sending)
			if err := <-first; !errors.Is(err, refused) {
				t.Errorf("a's refused subscribe: %v", err)
			}
			return <-second
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWire()
				tab := wireTable(w)
				a, b := twoSessions(t, tab)
				err := c.run(t, w, tab, a, b)
				synctest.Wait() // what the table sends in the background has arrived
				if listens := tab.Subscribed(uri); err != nil || !listens || !w.holding(uri) || b.entry.subscriptions != 1 || a.entry.subscriptions != 0 {
					t.Errorf("b's subscribe answered %v; b listens %v; the upstream holds uri %v; counts a %d, b %d",
						err, listens, w.holding(uri), a.entry.subscriptions, b.entry.subscriptions)
				}
				tab.Remove(b)
				synctest.Wait()
				if tab.Subscribed(uri) || w.holding(uri) || tab.Subscriptions() != 0 {
					t.Errorf("once every session left: listened to %v, the upstream holds uri %v", tab.Subscribed(uri), w.holding(uri))
				}
			})
		})
	}
}

// A session that subscribes to a URI whose unsubscribe waits its turn
// (behind the others of a session that ended) does not wait for that
// unsubscribe and a subscribe after it: the unsubscribe is not sent, and
// the upstream keeps the URI.
func TestResubscribeSkipsTheQueuedUnsubscribe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWire()
		tab := wireTable(w)
		a, b := twoSessions(t, tab)
		for _, uri := range []string{"x://1", "x://2"} {
			if err := tab.SubscribeURI(t.Context(), wireSubscriber(w, a), uri, true); err != nil {
				t.Fatal(err)
			}
		}
		unsubscribing := w.hold("resources/unsubscribe")
		tab.Remove(a)
		synctest.Wait() // the first of a's unsubscribes is on its way
		log := w.messages()
		first := log[len(log)-1]
		other := "x://1"
		if first == "resources/unsubscribe x://1" {
			other = "x://2"
		}
		second := inBackground(func() error { return tab.SubscribeURI(t.Context(), wireSubscriber(w, b), other, true) })
		synctest.Wait()
		close(unsubscribing)
		if err := <-second; err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if after := w.messages()[len(log):]; len(after) != 0 || !w.holding(other) || !tab.Subscribed(other) {
			t.Errorf("after %s, sent %q; the upstream holds %s %v", first, after, other, w.holding(other))
		}
		tab.Remove(b)
		synctest.Wait()
	})
}

// A session waiting for an unsubscribe that the closing hub never sends
// is released.
func TestCloseReleasesTheWaitForAnUnsubscribe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const uri = "x://r"
		w := newWire()
		stop := make(chan struct{})
		tab := wireTableStop(w, stop)
		a, b := twoSessions(t, tab)
		if err := tab.SubscribeURI(t.Context(), wireSubscriber(w, a), uri, true); err != nil {
			t.Fatal(err)
		}
		for range cap(tab.unsubscribing) { // every unsubscribe's turn taken
			tab.unsubscribing <- struct{}{}
		}
		tab.Remove(a)
		second := inBackground(func() error { return tab.SubscribeURI(t.Context(), wireSubscriber(w, b), uri, true) })
		synctest.Wait() // b waits for a's unsubscribe
		close(stop)
		if err := <-second; err != nil {
			t.Errorf("b's subscribe, the hub closing: %v", err)
		}
	})
}

// A subscribe the upstream refused (a JSON-RPC error) is followed by no
// unsubscribe; one that failed unanswered (it may have arrived) is.
func TestRefusedSubscribeSendsNoUnsubscribe(t *testing.T) {
	for _, c := range []struct {
		err  error
		want []string
	}{
		{&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no"}, []string{"resources/subscribe x://r"}},
		{errors.New("no answer within 1s"), []string{"resources/subscribe x://r", "resources/unsubscribe x://r"}},
	} {
		synctest.Test(t, func(t *testing.T) {
			w := newWire()
			w.refuse = c.err
			tab := wireTable(w)
			a := &fake{id: "a"}
			if err := tab.Add(a); err != nil {
				t.Fatal(err)
			}
			if err := tab.SubscribeURI(t.Context(), wireSubscriber(w, a), "x://r", true); !errors.Is(err, c.err) {
				t.Fatalf("subscribe: %v", err)
			}
			synctest.Wait()
			if got := w.messages(); !slices.Equal(got, c.want) {
				t.Errorf("refused with %v: sent %q, want %q", c.err, got, c.want)
			}
		})
	}
}
