// Package listen tells client sessions of changes to their lists: the
// list_changed notifications of legacy sessions, once a window has passed,
// and the subscriptions/listen of 2026-07-28 ones (SEP-2575), the only
// way those hear of changes. The hub feeds it (a reload or an upstream's
// list_changed, an upstream's resources/updated) and gives it, at
// construction, what it needs of the hub: its sessions, their views, and
// their resource subscriptions.
package listen

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// Kind is one of the lists a client is told has changed.
type Kind int

const (
	Tools Kind = iota
	Prompts
	Resources // with the templates
	Kinds
)

// Hashes are the hashes of a view's lists, by kind.
type Hashes [Kinds]uint64

// ChangedMethods are the list_changed notifications, by kind.
var ChangedMethods = [Kinds]string{
	"notifications/tools/list_changed",
	"notifications/prompts/list_changed",
	"notifications/resources/list_changed",
}

// Window is how long changes to one list gather before a client is told:
// upstreams that start together make one notification, not one each.
const Window = 100 * time.Millisecond

// Session is a client session of the hub's, as its listens see it.
type Session interface {
	// ID names the session in logs.
	ID() string
	// Lists is what the session was told of its lists, and its listens.
	Lists() *State
	// Notify sends the client a notification encoded whole; ctx picks
	// the stream it goes down (see the hub's Peer). It never blocks.
	Notify(ctx context.Context, msg []byte)
	// Listening tells the client's face that the hub has taken the
	// listen whose request ctx is (see the hub's Peer): what follows is
	// its stream. Never called for a listen refused.
	Listening(ctx context.Context)
	// Gone is closed when the session ends.
	Gone() <-chan struct{}
}

// Options are what a Notifier needs of the hub.
type Options[S Session] struct {
	Logger *slog.Logger
	// Spawn runs f on a goroutine the hub waits for at its Close, and
	// reports whether it did (not once Close has begun).
	Spawn func(f func()) bool
	// Stop is closed when the hub closes.
	Stop <-chan struct{}
	// Sessions calls f for each open session with the hash of its list k
	// in the current view (one snapshot for all).
	Sessions func(k Kind, f func(s S, hash uint64))
	// View is the current view of s: the hashes of its lists, and a func
	// that subscribes s to a resource in that view (the listen msg asks
	// for it).
	View func(s S, msg *jsonrpc.Message) (Hashes, func(ctx context.Context, uri string) error)
	// Unsubscribe ends s's subscriptions to uris, and unsubscribes the
	// upstreams where no session is left listening, in the background:
	// a listen's end never waits for an upstream.
	Unsubscribe func(s S, uris []string)
}

// Notifier tells the hub's sessions of changes to their lists, and
// serves their listens.
type Notifier[S Session] struct {
	opts    Options[S]
	pending [Kinds]atomic.Bool // a list_changed waits out its window
}

// New returns a Notifier for the hub opts describes.
func New[S Session](opts Options[S]) *Notifier[S] { return &Notifier[S]{opts: opts} }

// Pending reports whether a list_changed of list k waits out its window.
func (n *Notifier[S]) Pending(k Kind) bool { return n.pending[k].Load() }

// Changed tells every client whose view of list k is no longer the one
// it was last answered with, once the window has passed: however many
// changes come meanwhile, each client is told at most once. A client that
// never asked for the list is not told: it will get the current one. The
// window is waited out on a goroutine of the hub's, which Close ends.
func (n *Notifier[S]) Changed(k Kind) {
	if n.pending[k].Swap(true) {
		return
	}
	if !n.opts.Spawn(func() { n.tell(k) }) {
		n.pending[k].Store(false)
	}
}

// tell waits out the window, then tells the clients whose view of list k
// changed; nothing once the hub is closing.
func (n *Notifier[S]) tell(k Kind) {
	t := time.NewTimer(Window)
	defer t.Stop()
	select {
	case <-t.C:
	case <-n.opts.Stop:
		n.pending[k].Store(false)
		return
	}
	n.pending[k].Store(false) // a change from now on is told after another window
	n.opts.Sessions(k, func(sess S, current uint64) {
		st := sess.Lists()
		for _, l := range st.list() {
			l.listChanged(k, current)
		}
		if st.Modern() {
			return // told on its listens alone (2026-07-28: nothing unasked)
		}
		if seen := st.seen[k].Load(); seen != 0 && seen != current {
			sess.Notify(context.Background(), jsonrpc.EncodeNotification(ChangedMethods[k], nil))
		}
	})
}
