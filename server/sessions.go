package server

import (
	"cmp"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// maxUnsubscribing bounds how many unsubscribes the hub sends at once for
// sessions that ended.
const maxUnsubscribing = 4

// SessionInfo is what the hub knows of one client session: who the client
// is, what initialize negotiated, and how busy and how far behind it is.
type SessionInfo struct {
	ID              string // "stdio" for the stdio client
	Transport       string // stdio, streamable-http or sse
	User            string // the caller's name, else subject; "" where the face knows none
	Subject         string // the caller's key: jwt:SUBJECT, token:NAME, none:local
	Profile         string // the profile the session sees, "" for the whole config
	ClientName      string // from initialize; "" before it
	ClientVersion   string
	ProtocolVersion string // negotiated by initialize; "" before it
	Capabilities    mcp.ClientCapabilities
	Mode            string // the mode the session is shown (mode: auto chooses per client)
	ModeWhy         string // why: the clients: rule, the config's or profile's mode, or auto's reason
	Inflight        int    // the client's requests being answered
	Dropped         uint64 // notifications the client had no room for
}

// Sessions lists the open client sessions, by id.
func (h *Hub) Sessions() []SessionInfo {
	list, cfg := h.sessionList(), h.config()
	out := make([]SessionInfo, 0, len(list))
	for _, s := range list {
		s.mu.Lock()
		info := SessionInfo{ID: s.id, Transport: s.transport, ClientName: s.clientInfo.Name, ClientVersion: s.clientInfo.Version,
			ProtocolVersion: s.protocolVersion, Capabilities: s.capabilities, User: s.who.User(), Subject: s.who.Key(), Profile: s.profile}
		s.mu.Unlock()
		info.Inflight, info.Dropped = s.peer.Answering(), s.peer.Dropped()
		m, why := s.modeIn(cfg)
		info.Mode, info.ModeWhy = string(m), why
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b SessionInfo) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Dropped is how many notifications the hub has dropped for clients that
// had no room for them, since New, counting sessions that have ended: a
// counter that never goes down.
func (h *Hub) Dropped() uint64 {
	r := h.routes
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.droppedGone
	for _, s := range r.sessions {
		n += s.peer.Dropped()
	}
	return n
}

// unsubscribeGone tells the upstreams that no session listens to their
// URIs any more (those of a session that ended), in the background, so
// that ending a session never waits for an upstream. Each unsubscribe is
// bounded by list_timeout, at most maxUnsubscribing go out at once, and
// Close cancels those not done.
func (h *Hub) unsubscribeGone(owners map[string]*upstream.Server) {
	if len(owners) == 0 {
		return
	}
	h.spawn(func() {
		for uri, s := range owners {
			select {
			case h.unsubscribing <- struct{}{}:
			case <-h.stop:
				return
			}
			h.upstreamUnsubscribe(s, uri)
			<-h.unsubscribing
		}
	})
}
