package server

import (
	"context"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
)

// serveNotification handles a client's notification on sess. It runs on
// the reading goroutine, so nothing in it may wait on anyone.
func (h *Hub) serveNotification(ctx context.Context, sess *session, msg *jsonrpc.Message) {
	if obs := h.obs.Observer(); obs != nil {
		obs.Message(ctx, &traffic.Message{Direction: traffic.FromClient, Session: sess.id, Method: msg.Method, Params: msg.Params})
	}
	switch msg.Method {
	case "notifications/cancelled":
		return // the connection cancelled the request already
	case "notifications/roots/list_changed":
		h.rootsChanged(sess)
	}
	// Nothing else a client notifies changes what the hub keeps:
	// notifications/initialized ends a handshake that initialize has
	// already recorded (handshake.go).
}

// rootsChanged tells upstreams that the client's roots changed, off the
// reading goroutine, on a goroutine of the hub's; however many arrive
// meanwhile, one more goes out.
func (h *Hub) rootsChanged(sess *session) {
	if sess.rootsPending.Swap(true) {
		return
	}
	if !h.spawn(func() {
		sess.rootsPending.Store(false)
		h.mgr.Notify("notifications/roots/list_changed", nil)
	}) {
		sess.rootsPending.Store(false) // closing: no one is told any more
	}
}
