package server

import (
	"context"
	"time"
)

// listKind is one of the lists a client is told has changed.
type listKind int

const (
	listTools listKind = iota
	listPrompts
	listResources // with the templates
	listKinds
)

var listChangedMethods = [listKinds]string{
	"notifications/tools/list_changed",
	"notifications/prompts/list_changed",
	"notifications/resources/list_changed",
}

// listChangedWindow is how long changes to one list gather before a
// client is told: upstreams that start together make one notification,
// not one each.
const listChangedWindow = 100 * time.Millisecond

func (v *view) hash(k listKind) uint64 {
	return [listKinds]uint64{v.ToolsHash, v.PromptsHash, v.ResourcesHash}[k]
}

// saw records the list the client was just answered with.
func (s *session) saw(k listKind, hash uint64) { s.seen[k].Store(hash) }

// listChanged tells every client whose view of list k is no longer the
// one it was last answered with, once the window has passed: however many
// changes come meanwhile, each client is told at most once. A client that
// never asked for the list is not told: it will get the current one. The
// window is waited out on a goroutine of the hub's, which Close ends.
func (h *Hub) listChanged(k listKind) {
	if h.listPending[k].Swap(true) {
		return
	}
	if !h.spawn(func() { h.tellListChanged(k) }) {
		h.listPending[k].Store(false)
	}
}

// tellListChanged waits out the window, then tells the clients whose
// view of list k changed; nothing once the hub is closing.
func (h *Hub) tellListChanged(k listKind) {
	t := time.NewTimer(listChangedWindow)
	defer t.Stop()
	select {
	case <-t.C:
	case <-h.stop:
		h.listPending[k].Store(false)
		return
	}
	h.listPending[k].Store(false) // a change from now on is told after another window
	snap := h.snapshot()
	for _, sess := range h.sessionList() {
		current := snap.viewOf(sess.profileIn(snap.cfg)).hash(k)
		for _, l := range sess.listenList() {
			l.listChanged(k, current)
		}
		if sess.modern.Load() {
			continue // told on its listens alone (2026-07-28: nothing unasked)
		}
		if seen := sess.seen[k].Load(); seen != 0 && seen != current {
			sess.notify(context.Background(), listChangedMethods[k], nil)
		}
	}
}
