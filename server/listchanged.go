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
	return [listKinds]uint64{v.toolsHash, v.promptsHash, v.resourcesHash}[k]
}

// saw records the list the client was just answered with.
func (s *session) saw(k listKind, hash uint64) { s.seen[k].Store(hash) }

// listChanged tells every client whose view of list k is no longer the
// one it was last answered with, at most once per window. A client that
// never asked for the list is not told: it will get the current one.
func (h *Hub) listChanged(k listKind) {
	for _, sess := range h.sessionList() {
		if sess.seen[k].Load() == 0 || sess.listPending[k].Swap(true) {
			continue
		}
		time.AfterFunc(listChangedWindow, func() {
			sess.listPending[k].Store(false)
			if seen := sess.seen[k].Load(); seen != h.snapshot().view.hash(k) {
				sess.notify(context.Background(), listChangedMethods[k], nil)
			}
		})
	}
}
