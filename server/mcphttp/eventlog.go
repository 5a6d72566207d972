package mcphttp

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// The events of a session's GET stream, kept for the client to resume
// (MCP 2025-11-25, basic/transports, "Resumability and Redelivery"):
// every message the hub sends down a Streamable HTTP session's GET stream
// is an SSE event with an id, "<stream>-<seq>", where stream is random to
// the session (so an id of one session names nothing in another, and
// cannot be guessed) and seq counts up from 1. A notification sent while
// the session has no GET stream open is kept too. The hub keeps the last
// maxKeptEvents events or maxKeptBytes of them, whichever is reached
// first, in memory (and maxKeptTotal for all sessions); a GET with Last-Event-ID gets the kept events after
// that id, then the live ones. An id older than what is kept gets what is
// kept (the events between are lost, and the client is not told: the
// spec has no way to say so); an id the session did not give gets only
// the live ones. 2026-07-28 has no GET stream and no resumption
// (SEP-2575). The events are kept by the replica that sent them: a
// client that resumes a sealed session at another replica gets the live
// events there, not the ones it missed; with a store (Options.Store),
// they are kept in the store instead, with the same bounds, for every
// replica (server/relay).

// The bounds are the store's (shared.MaxEvents and the rest), so that a
// relayed session keeps what one that is not does.
const (
	// maxKeptEvents is how many events of a session's GET stream are kept.
	maxKeptEvents = shared.MaxEvents
	// maxKeptBytes is how many bytes of them are kept.
	maxKeptBytes = shared.MaxEventBytes
	// maxKeptTotal is how many bytes of events are kept for all the
	// sessions of a face together: a session whose event would go beyond
	// it forgets what it kept, and keeps nothing until there is room.
	maxKeptTotal = shared.MaxEventsTotal
)

// keptEvent is one event of a GET stream, as sent.
type keptEvent struct {
	seq  uint64
	msg  []byte
	note bool // a notification (may be dropped by a full outbox)
}

// eventLog is the kept events of a session's GET stream; its
// sessionStream's mu guards it.
type eventLog struct {
	stream string        // random, the "<stream>" of every id
	seq    uint64        // the last seq given
	kept   []keptEvent   // oldest first
	bytes  int           // sum of len(msg) over kept
	total  *atomic.Int64 // bytes kept by every session of the face (maxKeptTotal); nil: not counted
}

func newEventLog() eventLog {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return eventLog{stream: hex.EncodeToString(b)}
}

// id is the event id of seq.
func (l *eventLog) id(seq uint64) string { return eventID(l.stream, seq) }

// eventID is the id of event seq of stream: "<stream>-<seq>".
func eventID(stream string, seq uint64) string {
	return stream + "-" + strconv.FormatUint(seq, 10)
}

// eventSeq is the seq of id, an event id of stream; false for an id of
// any other stream, or not an id.
func eventSeq(stream, id string) (uint64, bool) {
	rest, ok := strings.CutPrefix(id, stream+"-")
	if !ok {
		return 0, false
	}
	seq, err := strconv.ParseUint(rest, 10, 64)
	return seq, err == nil
}

// add numbers msg and keeps it, forgetting the oldest beyond the bounds
// (a message larger than maxKeptBytes alone is numbered, not kept), and
// returns its id.
func (l *eventLog) add(msg []byte, note bool) string {
	l.seq++
	before := l.bytes
	keep := len(msg) <= maxKeptBytes
	if keep && l.total != nil && l.total.Load()+int64(len(msg)) > maxKeptTotal {
		// What is kept stays the events after some id, with no gap:
		// forget all, keep nothing of this one.
		l.clear()
		before, keep = 0, false
	}
	if keep {
		l.kept = append(l.kept, keptEvent{seq: l.seq, msg: msg, note: note})
		l.bytes += len(msg)
	}
	n := 0
	for len(l.kept)-n > maxKeptEvents || l.bytes > maxKeptBytes {
		l.bytes -= len(l.kept[n].msg)
		l.kept[n] = keptEvent{}
		n++
	}
	if n > 0 {
		l.kept = append(l.kept[:0], l.kept[n:]...)
	}
	if l.total != nil {
		l.total.Add(int64(l.bytes - before))
	}
	return l.id(l.seq)
}

// clear forgets every kept event (the ids given stay given).
func (l *eventLog) clear() {
	if l.total != nil {
		l.total.Add(-int64(l.bytes))
	}
	l.kept, l.bytes = nil, 0
}

// after is the kept events after lastID; ok is false when lastID is not
// an id of this log (another session's, or not an id).
func (l *eventLog) after(lastID string) (events []keptEvent, ok bool) {
	seq, found := eventSeq(l.stream, lastID)
	if !found || seq > l.seq {
		return nil, false
	}
	for i, e := range l.kept {
		if e.seq > seq {
			return l.kept[i:], true
		}
	}
	return nil, true
}

// framed is msg as an outbox of an id'd stream holds it: "<id>\n<msg>"
// (see sseWriter.events).
func framed(id string, msg []byte) []byte {
	b := make([]byte, 0, len(id)+1+len(msg))
	b = append(b, id...)
	b = append(b, '\n')
	return append(b, msg...)
}
