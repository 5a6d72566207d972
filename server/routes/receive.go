package routes

import (
	"context"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
)

// ClientNotification handles a client's notification on sess. It runs on
// the reading goroutine, so nothing in it may wait on anyone.
func (t *Table[S]) ClientNotification(ctx context.Context, sess S, msg *jsonrpc.Message) {
	if obs := t.opts.Observer(); obs != nil {
		obs.Message(ctx, &traffic.Message{Direction: traffic.FromClient, Session: sess.ID(), Method: msg.Method, Params: msg.Params})
	}
	switch msg.Method {
	case "notifications/cancelled":
		return // the connection cancelled the request already
	case "notifications/roots/list_changed":
		t.RootsChanged(sess)
	}
	// Nothing else a client notifies changes what the hub keeps:
	// notifications/initialized ends a handshake that initialize has
	// already recorded (handshake.go).
}

// RootsChanged tells upstreams that the client's roots changed, off the
// reading goroutine, on a goroutine of the hub's; however many arrive
// meanwhile, one more goes out.
func (t *Table[S]) RootsChanged(sess S) {
	pending := &sess.Routing().rootsPending
	if pending.Swap(true) {
		return
	}
	if !t.opts.Spawn(func() {
		pending.Store(false)
		t.opts.Manager.Notify("notifications/roots/list_changed", nil)
	}) {
		pending.Store(false) // closing: no one is told any more
	}
}

// RootsPending reports whether a roots/list_changed of the session waits
// to go upstream.
func (e *Entry) RootsPending() bool { return e.rootsPending.Load() }
