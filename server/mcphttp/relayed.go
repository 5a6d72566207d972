package mcphttp

import (
	"context"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/relay"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// The face's side of the relay between replicas (server/relay): the
// sessions here as the relay reaches them (relaySessions), each by its
// Peer (relayPeer). A sealed session goes through the relay when the face
// has a store (Options.Store): its GET stream's events are numbered by the
// store, not by its eventLog, with ids of the same form.

// newRelay starts the relay of s on its store.
func newRelay(s *Server) *relay.Relay {
	return relay.New(relay.Options{Store: s.opts.Store, Sessions: relaySessions{s}, Logger: s.logger,
		Now: func() time.Time { return s.now() }, Lifetime: sealedLifetime,
		MaxMessageSize: func() int { return s.hub.Settings().MaxMessageSize }})
}

// relayTo has hs, a sealed session whose id was sealed under the key
// numbered key, go through the relay, when there is one (s.relay is not
// nil): its GET stream named for it on every replica. Called before hs is
// registered.
func relayTo(s *Server, hs *httpSession, key int) {
	if s.relay == nil {
		return
	}
	hs.stream = s.sealer.streamName(key, hs.id)
	hs.st.relayed = s.relay.Open(hs.stream, relayPeer{hs})
}

// claimRelayed makes st the GET stream of hs, a relayed session, as
// claimStandalone does for one that is not (relay.Relay.Claim): lastID
// resumes when it is an event id of this session's. last is the id of
// the event it starts after, for the priming event; status is the HTTP
// status of a refusal.
func claimRelayed(r *relay.Relay, hs *httpSession, st *stream, lastID string) (last string, status int) {
	after, resumes := eventSeq(hs.stream, lastID)
	seq, status := r.Claim(hs.st.relayed, after, resumes, func(resumes bool) bool {
		if !hs.st.takeStandalone(st, resumes) {
			return false
		}
		st.ids = true
		return true
	})
	if status != 0 {
		return "", status
	}
	return eventID(hs.stream, seq), 0
}

// relaySessions are the face's sessions as the relay reaches them.
type relaySessions struct{ s *Server }

// Relayed are the sessions here that go through the relay.
func (rs relaySessions) Relayed() []*relay.Stream {
	var out []*relay.Stream
	for _, hs := range rs.s.sessions.relayed() {
		out = append(out, hs.st.relayed)
	}
	return out
}

// ByStream is the session here whose stream is named name, or nil.
func (rs relaySessions) ByStream(name string) *relay.Stream {
	if hs := rs.s.sessions.byStream(name); hs != nil {
		return hs.st.relayed
	}
	return nil
}

// Deleted remembers the stream of a session ended by DELETE at another
// replica (resume.go).
func (rs relaySessions) Deleted(name string) {
	rs.s.deleted.add(name, rs.s.now().Add(sealedLifetime))
}

// relayPeer is hs as the relay reaches it.
type relayPeer struct{ hs *httpSession }

// Lock and Unlock are hs's stream's (they guard its GET stream).
func (p relayPeer) Lock()   { p.hs.st.mu.Lock() }
func (p relayPeer) Unlock() { p.hs.st.mu.Unlock() }

func (p relayPeer) ID() string               { return p.hs.id }
func (p relayPeer) Context() context.Context { return p.hs.ctx }

func (p relayPeer) Deliver(ctx context.Context, body []byte) { p.hs.st.deliver(ctx, body) }

func (p relayPeer) Request(ctx context.Context, m *jsonrpc.Message) {
	_, _ = p.hs.sess.Request(ctx, m)
}

// Open reports whether hs's GET stream is open here; its stream's mu is
// held.
func (p relayPeer) Open() bool { return p.hs.st.standalone != nil }

// Put puts msg, with the id of event seq, on the GET stream open here,
// counting a notification its outbox dropped as lost; its stream's mu is
// held.
func (p relayPeer) Put(seq uint64, msg []byte, note bool) {
	ss := p.hs.st
	if ss.standalone.put(framed(eventID(p.hs.stream, seq), msg), note) != nil && note {
		ss.lost.Add(1)
	}
}

// End ends hs, DELETEd at another replica: remembered as ended until any
// id of it has expired, and dropped.
func (p relayPeer) End() {
	s := p.hs.face
	s.ended.add(p.hs.id, s.now().Add(sealedLifetime))
	s.sessions.drop(p.hs)
}
