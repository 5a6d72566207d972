package routes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// fake is a client session that records what it is told.
type fake struct {
	id    string
	user  string
	entry Entry
	mu    sync.Mutex
	sent  [][]byte // the notifications it was sent
}

func (f *fake) ID() string        { return f.id }
func (f *fake) UserKey() string   { return f.user }
func (f *fake) SessionID() string { return f.id }
func (f *fake) Client() string    { return "" }
func (f *fake) ClientCapabilities() (mcp.ClientCapabilities, bool) {
	return mcp.ClientCapabilities{}, false
}
func (f *fake) Dropped() uint64                               { return 0 }
func (f *fake) End()                                          {}
func (f *fake) GetLogLevel() mcp.LoggingLevel                 { return mcp.LoggingLevelInfo }
func (f *fake) GetClientCapabilities() mcp.ClientCapabilities { return mcp.ClientCapabilities{} }
func (f *fake) Modern() bool                                  { return false }
func (f *fake) Updated(string, json.RawMessage)               {}
func (f *fake) Routing() *Entry                               { return &f.entry }
func (f *fake) Notify(_ context.Context, msg []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, msg)
}

// notes are the notifications f was sent, as text.
func (f *fake) notes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, m := range f.sent {
		out = append(out, string(m))
	}
	return out
}
func (f *fake) Request(context.Context, string, any) (json.RawMessage, error) { return nil, nil }

// newTable is a table whose background work runs at once.
func newTable() *Table[*fake] {
	return New(Options[*fake]{
		Spawn:       func(f func()) bool { f(); return true },
		Stop:        make(chan struct{}),
		Unsubscribe: func(*upstream.Server, string) error { return nil },
	})
}

func TestAddRefusesAnOpenID(t *testing.T) {
	tab := newTable()
	a := &fake{id: "a"}
	if err := tab.Add(a); err != nil {
		t.Fatal(err)
	}
	if got := tab.For(nil); got != a {
		t.Errorf("For(nil) with one session = %v, want it", got)
	}
	if err := tab.Add(&fake{id: "a"}); !errors.Is(err, ErrSessionExists) {
		t.Errorf("second session a: %v, want ErrSessionExists", err)
	}
	if err := tab.Add(&fake{id: "b"}); err != nil {
		t.Fatal(err)
	}
	if got := tab.For(nil); got != nil {
		t.Errorf("For(nil) with two sessions = %v, want none (never a guess)", got)
	}
}

// userOwner owns a user's own connection (upstream's per-user owner).
type userOwner string

func (u userOwner) UserKey() string { return string(u) }
func (userOwner) Client() string    { return "" }
func (userOwner) SessionID() string { return "" }
func (userOwner) ClientCapabilities() (mcp.ClientCapabilities, bool) {
	return mcp.ClientCapabilities{}, false
}

// A request on a user's own connection goes to that user's client, never
// to another user's, even when it is the only client open.
func TestForNeverAnotherUsersSession(t *testing.T) {
	tab := newTable()
	bob := &fake{id: "b", user: "bob"}
	if err := tab.Add(bob); err != nil {
		t.Fatal(err)
	}
	if got := tab.For(userOwner("alice")); got != nil {
		t.Errorf("For(alice's connection) with only bob's session = %v, want none", got)
	}
	if got := tab.For(userOwner("bob")); got != bob {
		t.Errorf("For(bob's connection) = %v, want bob's session", got)
	}
	alice := &fake{id: "a", user: "alice"}
	if err := tab.Add(alice); err != nil {
		t.Fatal(err)
	}
	if got := tab.For(userOwner("alice")); got != alice {
		t.Errorf("For(alice's connection) = %v, want alice's session", got)
	}
	if got := tab.For(nil); got != nil {
		t.Errorf("For(nil) with two sessions = %v, want none", got)
	}
	if err := tab.Add(&fake{id: "a2", user: "alice"}); err != nil {
		t.Fatal(err)
	}
	if got := tab.For(userOwner("alice")); got != nil {
		t.Errorf("For(alice's connection) with two of alice's sessions = %v, want none (never a guess)", got)
	}
}

// An owner that is a session is found by its id and held to be that
// session: one that ended is no one's (never the only other session
// open), nor is a session that took its id since.
func TestForASessionThatEndedIsNone(t *testing.T) {
	tab := newTable()
	a, b := &fake{id: "a"}, &fake{id: "b"}
	for _, s := range []*fake{a, b} {
		if err := tab.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	if got := tab.For(a); got != a {
		t.Errorf("For(a) = %v, want a", got)
	}
	tab.Remove(a)
	if got, session := tab.Of(a); got != nil || !session {
		t.Errorf("Of(a ended) = %v, %v; want none, a session", got, session)
	}
	if got := tab.For(a); got != nil {
		t.Errorf("For(a ended) with only b open = %v, want none", got)
	}
	again := &fake{id: "a"}
	if err := tab.Add(again); err != nil {
		t.Fatal(err)
	}
	if got := tab.For(a); got != nil {
		t.Errorf("For(a ended) with a new session a = %v, want none", got)
	}
	if got, session := tab.Of(userOwner("alice")); got != nil || session {
		t.Errorf("Of(a user's connection) = %v, %v; want none, no session", got, session)
	}
}

// A session of one request (AddUnlisted) is found as its calls' owner,
// by Of and For, until Remove, and is in no list: never the only session
// open that another owner's request goes to.
func TestUnlistedSessionFoundNotListed(t *testing.T) {
	tab := newTable()
	one := &fake{id: "one"}
	if err := tab.AddUnlisted(one); err != nil {
		t.Fatal(err)
	}
	if got, session := tab.Of(one); got != one || !session {
		t.Errorf("Of(unlisted) = %v, %v; want it, a session", got, session)
	}
	if got := tab.For(one); got != one {
		t.Errorf("For(unlisted) = %v, want it", got)
	}
	if got := tab.List(); len(got) != 0 {
		t.Errorf("List = %v, want none", got)
	}
	if got := tab.For(userOwner("")); got != nil {
		t.Errorf("For(no session) with only an unlisted one = %v, want none", got)
	}
	listed := &fake{id: "one"} // a listed session of the same id is another
	if err := tab.Add(listed); err != nil {
		t.Fatal(err)
	}
	if got, _ := tab.Of(one); got != one {
		t.Errorf("Of(unlisted) beside a listed session of its id = %v, want it", got)
	}
	tab.Remove(one)
	if got, session := tab.Of(one); got != nil || !session {
		t.Errorf("Of(unlisted, removed) = %v, %v; want none, a session", got, session)
	}
	if got, _ := tab.Of(listed); got != listed {
		t.Errorf("Of(listed) after the unlisted one of its id went = %v, want it", got)
	}
}

// Progress reaches the call only from the server the call went to: the
// hub's tokens are counted, so another server may guess one.
func TestProgressOnlyFromTheCallsServer(t *testing.T) {
	tab := newTable()
	a := &fake{id: "a"}
	f, g := &upstream.Server{}, &upstream.Server{}
	tok, forget := tab.TrackProgress(t.Context(), a, f, json.RawMessage(`"mine"`))
	params, _ := jsonrpc.ScanObject(fmt.Appendf(nil, `{"progressToken":%q}`, tok))
	if _, _, ok, _ := tab.progressOf(upstream.Event{Server: g}, params); ok {
		t.Error("another server's progress taken for the call's")
	}
	if _, r, ok, _ := tab.progressOf(upstream.Event{Server: f}, params); !ok || r.sess != a || string(r.token) != `"mine"` {
		t.Errorf("the call's own progress: ok %v, route %+v", ok, r)
	}
	forget()
	if _, _, ok, _ := tab.progressOf(upstream.Event{Server: f}, params); ok {
		t.Error("progress after the call ended")
	}
}

// A 2026-07-28 client's call held across rounds (server/rounds) went
// upstream with the first round's token; each round is a request of its
// own (without a session, one each), whose token the round that sent the
// call forgot when it answered input_required. The call's progress
// reaches the round in flight as that round's, and what came between
// rounds reaches the next one, in order: none is lost (a server that asks
// the client something, as the everything server asks roots/list 350 ms
// after it starts, in the middle of a call's progress, lost the rest).
func TestProgressOfAHeldCallReachesItsRounds(t *testing.T) {
	tab := New(Options[*fake]{
		Logger:      slog.New(slog.DiscardHandler),
		Spawn:       func(f func()) bool { f(); return true },
		Stop:        make(chan struct{}),
		Observer:    func() traffic.Observer { return nil },
		Redact:      func(p json.RawMessage) json.RawMessage { return p },
		Unsubscribe: func(*upstream.Server, string) error { return nil },
	})
	s := &upstream.Server{Config: &config.Server{Name: "ev"}}
	progress := func(tok string, n int) {
		tab.Notification(upstream.Event{Kind: upstream.EventNotification, Server: s, Context: t.Context(),
			Method: "notifications/progress", Params: fmt.Appendf(nil, `{"progressToken":%q,"progress":%d,"total":4}`, tok, n)})
	}
	first, second := &fake{id: "round-1"}, &fake{id: "round-2"}
	tok, forget := tab.TrackProgress(t.Context(), first, s, json.RawMessage(`"client"`))
	carry, release := tab.HoldProgress(tok)
	progress(tok, 1)
	forget() // the first round answered input_required
	progress(tok, 2)
	progress(tok, 3)
	tok2, forget2 := tab.TrackProgress(t.Context(), second, s, json.RawMessage(`"client-2"`))
	end := carry(tok2)
	progress(tok, 4)
	end()
	forget2()
	release()
	progress(tok, 5) // the call has ended
	want1 := []string{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"client","progress":1,"total":4}}`}
	if got := first.notes(); !slices.Equal(got, want1) {
		t.Errorf("the first round was sent\n%v\nwant\n%v", got, want1)
	}
	var want2 []string
	for n := 2; n <= 4; n++ {
		want2 = append(want2, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"client-2","progress":%d,"total":4}}`, n))
	}
	if got := second.notes(); !slices.Equal(got, want2) {
		t.Errorf("the second round was sent\n%v\nwant\n%v", got, want2)
	}
}

// A session's subscriptions are counted and bounded; an upstream that
// refuses the first subscription leaves none behind.
func TestSubscriptionsCountedAndRefusalsForgotten(t *testing.T) {
	tab := newTable()
	a := &fake{id: "a"}
	s := &upstream.Server{}
	refuse := errors.New("refused")
	var sent []string
	sub := Subscriber[*fake]{Session: a,
		Resolve: func(context.Context, string, bool) (*upstream.Server, bool) { return s, false },
		Routed:  func(*upstream.Server, string) {},
		Subscribe: func(_ context.Context, _ *upstream.Server, uri string) error {
			sent = append(sent, uri)
			if uri == "x://no" {
				return refuse
			}
			return nil
		},
	}
	if err := tab.SubscribeURI(t.Context(), sub, "x://no", true); !errors.Is(err, refuse) {
		t.Fatalf("refused subscription: %v", err)
	}
	if tab.Subscribed("x://no") || a.entry.subscriptions != 0 {
		t.Errorf("a refused subscription kept (count %d)", a.entry.subscriptions)
	}
	for i := range MaxSessionSubscriptions {
		if err := tab.SubscribeURI(t.Context(), sub, fmt.Sprintf("x://%d", i), true); err != nil {
			t.Fatal(err)
		}
	}
	if err := tab.SubscribeURI(t.Context(), sub, "x://0", true); err != nil {
		t.Errorf("a subscription held already, again: %v", err)
	}
	var rerr *jsonrpc.Error
	if err := tab.SubscribeURI(t.Context(), sub, "x://over", true); !errors.As(err, &rerr) || rerr.Code != jsonrpc.CodeInvalidRequest {
		t.Errorf("one over the bound: %v", err)
	}
	if n := len(sent); n != MaxSessionSubscriptions+1 {
		t.Errorf("%d subscribes sent upstream, want %d (each URI's first)", n, MaxSessionSubscriptions+1)
	}
	tab.Unsubscribe(a, []string{"x://0"}) // no session listens now: unsubscribed in the background
	if tab.Subscribed("x://0") || a.entry.subscriptions != MaxSessionSubscriptions-1 {
		t.Errorf("after an unsubscribe: held %v, count %d", tab.Subscribed("x://0"), a.entry.subscriptions)
	}
}

func TestCanElicit(t *testing.T) {
	form, url := &mcp.ElicitationCapability{Form: &struct{}{}}, &mcp.ElicitationCapability{URL: &struct{}{}}
	for _, c := range []struct {
		e    *mcp.ElicitationCapability
		mode string
		want bool
	}{
		{nil, "", false},
		{&mcp.ElicitationCapability{}, "", true}, // no mode named: forms
		{&mcp.ElicitationCapability{}, "url", false},
		{form, "", true},
		{form, "url", false},
		{url, "", false},
		{url, "url", true},
	} {
		if got := CanElicit(c.e, c.mode); got != c.want {
			t.Errorf("CanElicit(%+v, %q) = %v, want %v", c.e, c.mode, got, c.want)
		}
	}
	if m := ElicitationMode(json.RawMessage(`{"mode":"url","message":"m"}`)); m != "url" {
		t.Errorf("mode %q", m)
	}
}

// A session that goes while its first subscribe to a URI is on its way
// upstream leaves no subscription behind at the upstream, whether the
// subscribe then succeeds or ends unanswered (cancelled with the
// session: the upstream may have taken it all the same).
func TestSessionGoneDuringFirstSubscribe(t *testing.T) {
	for _, answer := range []error{nil, context.Canceled} {
		t.Run(fmt.Sprint(answer), func(t *testing.T) {
			// The upstream: what it holds subscribed, each message taken
			// as it arrives.
			var mu sync.Mutex
			held := map[string]bool{}
			tab := New(Options[*fake]{
				Spawn: func(f func()) bool { f(); return true },
				Stop:  make(chan struct{}),
				Unsubscribe: func(_ *upstream.Server, uri string) error {
					mu.Lock()
					defer mu.Unlock()
					delete(held, uri)
					return nil
				},
			})
			a := &fake{id: "a"}
			if err := tab.Add(a); err != nil {
				t.Fatal(err)
			}
			s := &upstream.Server{}
			sending, arrive := make(chan struct{}), make(chan struct{})
			sub := Subscriber[*fake]{Session: a,
				Resolve: func(context.Context, string, bool) (*upstream.Server, bool) { return s, false },
				Routed:  func(*upstream.Server, string) {},
				Subscribe: func(_ context.Context, _ *upstream.Server, uri string) error {
					close(sending)
					<-arrive // the session goes first; then the subscribe reaches the upstream
					mu.Lock()
					held[uri] = true
					mu.Unlock()
					return answer
				},
			}
			done := make(chan error, 1)
			go func() { done <- tab.SubscribeURI(context.Background(), sub, "x://r", true) }()
			<-sending
			tab.Remove(a)
			close(arrive)
			<-done
			mu.Lock()
			left := held["x://r"]
			mu.Unlock()
			if left || tab.Subscribed("x://r") {
				t.Errorf("after the session went: subscribed upstream %v, in the table %v", left, tab.Subscribed("x://r"))
			}
			// The URI is free to be subscribed again, and is sent again.
			b := &fake{id: "b"}
			sub.Session = b
			arrive = make(chan struct{})
			close(arrive)
			sending = make(chan struct{})
			if err := tab.SubscribeURI(t.Context(), sub, "x://r", true); err != answer {
				t.Fatalf("subscribe again: %v", err)
			}
			mu.Lock()
			again := held["x://r"]
			mu.Unlock()
			if answer == nil && (!again || !tab.Subscribed("x://r") || b.entry.subscriptions != 1) {
				t.Errorf("subscribed again: upstream %v, table %v, count %d", again, tab.Subscribed("x://r"), b.entry.subscriptions)
			}
		})
	}
}
