package relay

import (
	"net/http"
	"sync"
)

// Stream is what the relay knows of one session's GET stream when its
// events go through the store (relay.go) instead of the face's event
// log: its name on every replica, and how far its GET stream here has
// had them. Its Peer's lock guards delivered and gen.
type Stream struct {
	r         *Relay
	peer      Peer
	name      string      // the session's stream name, the same on every replica
	delivered uint64      // the last number put on the GET stream open here
	gen       uint64      // counts the claims of the GET stream (a pull of an older claim is dropped)
	budget    relayBudget // what the session may publish to the other replicas (budget.go)
	pulling   sync.Mutex  // held by the one pull of the store's events at a time
}

// Open has the session of peer, a sealed session, go through the relay:
// its GET stream named name on every replica. Called before the session
// is registered (Sessions finds it by name from then on).
func (r *Relay) Open(name string, peer Peer) *Stream {
	return &Stream{r: r, peer: peer, name: name}
}

// Enqueue queues msg, to go down the session's GET stream (at whichever
// replica holds it, this one's included), to be appended to the store;
// false when the queue is full (msg is lost).
func (l *Stream) Enqueue(msg []byte, note bool) bool { return l.r.enqueue(l, msg, note) }

// open reports whether the session's GET stream is open here.
func (l *Stream) open() bool {
	l.peer.Lock()
	defer l.peer.Unlock()
	return l.peer.Open()
}

// Claim makes the GET stream of hs, a relayed session, the one take
// takes (under the Peer's lock, with whether it resumes), as the face
// does for a session that is not relayed: it starts after the event
// numbered after when resumes (the client's Last-Event-ID is an event of
// this session's) and the store gave it, else after the last event the
// store gave (live events only); a second GET is refused unless it
// resumes (take says so). The events are put on it by the relay's
// pullers. last is the number of the event it starts after, for the
// priming event. status is the HTTP status of a refusal: 409 for a
// second GET, 503 when the store cannot tell the stream's last number
// (the stream would start over, from its first event kept).
func (r *Relay) Claim(hs *Stream, after uint64, resumes bool, take func(resumes bool) bool) (last uint64, status int) {
	top, err := r.last(hs.name)
	if err != nil {
		return 0, http.StatusServiceUnavailable
	}
	from := after
	if !resumes || from > top {
		from, resumes = top, false
	}
	hs.peer.Lock()
	if !take(resumes) {
		hs.peer.Unlock()
		return 0, http.StatusConflict
	}
	hs.delivered = from
	hs.gen++
	hs.peer.Unlock()
	r.logger.Debug("relay: a GET stream opened here", "session", hs.peer.ID(), "after", from, "resumes", resumes)
	r.schedule(hs)
	return from, 0
}
