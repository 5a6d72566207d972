package mcphttp

import "net/http"

// relayedLog is what a session's stream knows of its GET stream's events
// when they go through the store (relay.go) instead of its eventLog:
// how far its GET stream here has had them.
// Its sessionStream's mu guards delivered and gen.
type relayedLog struct {
	r         *relay
	hs        *httpSession // its stream is hs.stream
	delivered uint64       // the last number put on the GET stream open here
	gen       uint64       // counts the claims of the GET stream (a pull of an older claim is dropped)
	budget    relayBudget  // what the session may publish to the other replicas (relaybudget.go)
}

// id is the event id of seq, as the eventLog's.
func (l *relayedLog) id(seq uint64) string { return eventID(l.hs.stream, seq) }

// parse is the number of an event id of this stream; false for any other.
func (l *relayedLog) parse(id string) (uint64, bool) { return eventSeq(l.hs.stream, id) }

// relayTo has hs, a sealed session whose id was sealed under the key
// numbered key, go through the relay, when there is one (r is not nil):
// its GET stream named for it on every replica. Called before hs is
// registered.
func (r *relay) relayTo(hs *httpSession, key int) {
	if r == nil {
		return
	}
	hs.stream = r.s.sealer.streamName(key, hs.id)
	hs.st.relayed = &relayedLog{r: r, hs: hs}
}

// claimRelayed makes st the GET stream of hs, a relayed session, as
// claimStandalone does for one that is not: it starts after the event
// lastID names when that is an event of this session's the store gave,
// else after the last event the store gave (live events only); a second
// GET is refused unless it resumes. The events are put on st by the
// relay's pullers. last is the id of the event it starts after, for the
// priming event. status is the HTTP status of a refusal: 409 for a
// second GET, 503 when the store cannot tell the stream's last number
// (the stream would start over, from its first event kept).
func (r *relay) claimRelayed(hs *httpSession, st *stream, lastID string) (last string, status int) {
	l := hs.st.relayed
	top, err := r.last(hs.stream)
	if err != nil {
		return "", http.StatusServiceUnavailable
	}
	from, resumes := l.parse(lastID)
	if !resumes || from > top {
		from, resumes = top, false
	}
	ss := hs.st
	ss.mu.Lock()
	if !ss.takeStandalone(st, resumes) {
		ss.mu.Unlock()
		return "", http.StatusConflict
	}
	st.ids = true
	l.delivered = from
	l.gen++
	ss.mu.Unlock()
	r.s.logger.Debug("relay: a GET stream opened here", "session", hs.id, "after", from, "resumes", resumes)
	r.schedule(hs)
	return l.id(from), 0
}
