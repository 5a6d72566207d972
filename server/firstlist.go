package server

import (
	"context"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A client shown flat mode lists its tools once, right after the
// handshake, and may start its turn without a server whose list is
// pending (Codex, waiting a second at most unless its
// mcp_optional_startup_grace_ms is 0, as install writes it: see
// types/clients/codexgrace.go). Its first tools/list waits for the upstreams still
// starting whose tools are not known (see view.Unknown), up to
// startup_wait; its handshake waits for them first, so that the list is
// answered at once.

// toolsKnown says no upstream of the view is starting with its tools
// unknown: a flat tools/list is answered from it without waiting.
func toolsKnown(v *view) bool { return !v.Unknown }

// awaitHandshake holds the handshake of a client shown the view key until
// its first tools/list could be answered without waiting: the tools of
// the upstreams' last run are read and every upstream never run with its
// config has listed its tools or failed, up to startup_wait from the
// hub's start (as long as that list would wait, never longer). A client
// shown dynamic mode is answered at once, as is one that comes later: its
// first list waits startup_wait, as ever. The session keeps the end of
// the wait, its first list's too (see firstListWait).
func (h *Hub) awaitHandshake(ctx context.Context, req *request, key string) {
	if v := req.snap.viewOf(key); v.Mode != config.ModeFlat || toolsKnown(v) {
		return
	}
	by := h.started.Add(req.snap.cfg.Settings.StartupWait)
	wait := time.Until(by)
	if wait <= 0 {
		return
	}
	req.sess.handshakeWaits(by)
	h.awaitView(ctx, key, wait, toolsKnown)
}

// firstListWait is how long a flat tools/list of the session waits for
// the upstreams still starting: startup_wait, but, for the first list
// after a handshake that waited for them (awaitHandshake), no longer than
// that wait's end, so that the two together never wait longer than a
// client's first list alone would. A later list (a server added by a
// reload and still starting) waits startup_wait, as every list did.
func (s *clientState) firstListWait(cfg *config.Config) time.Duration {
	if by := s.startupBy.Swap(0); by != 0 {
		return time.Until(time.Unix(0, by))
	}
	return cfg.Settings.StartupWait
}

// handshakeWaits notes that the client's handshake waits for the
// upstreams starting until by (see firstListWait).
func (s *clientState) handshakeWaits(by time.Time) { s.startupBy.Store(by.UnixNano()) }
