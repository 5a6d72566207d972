package mcphttp

import (
	"crypto/subtle"
	"log/slog"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/httpguard"
)

// sessionTable is the face's sessions open here, by id and, those that go
// through the relay, by stream name, with the cap on how many may be
// open at once (Options.MaxSessions, and each client's share of it).
type sessionTable struct {
	max    int               // Options.MaxSessions
	shares *httpguard.Shares // each client's part of the caps
	logger *slog.Logger

	mu        sync.Mutex // guards sessions, streams, pending, pendingBy and closed
	sessions  map[string]*httpSession
	streams   map[string]*httpSession // the relayed sessions, by stream name (server/relay)
	pending   int                     // sessions being made, counted against the cap
	pendingBy map[string]int          // pending by client, when clients have shares
	closed    bool                    // no more sessions
}

func newSessionTable(max int, shares *httpguard.Shares, logger *slog.Logger) *sessionTable {
	return &sessionTable{max: max, shares: shares, logger: logger, sessions: map[string]*httpSession{},
		streams: map[string]*httpSession{}, pendingBy: map[string]int{}}
}

func (t *sessionTable) lookup(id string) *httpSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sessions[id]
}

// owned is the session id names when it belongs to the credential owner,
// else nil: to any other credential a session is as unknown as an id
// never handed out, so that one who learns its id can neither use it nor
// tell it exists.
func (t *sessionTable) owned(id, owner string) *httpSession {
	hs := t.lookup(id)
	if hs == nil || subtle.ConstantTimeCompare([]byte(hs.owner), []byte(owner)) != 1 {
		return nil
	}
	return hs
}

func (t *sessionTable) drop(hs *httpSession) {
	t.mu.Lock()
	if t.sessions[hs.id] == hs {
		delete(t.sessions, hs.id)
	}
	if hs.stream != "" && t.streams[hs.stream] == hs {
		delete(t.streams, hs.stream)
	}
	t.mu.Unlock()
	hs.end()
}

// byStream is the session here whose stream is named stream, or nil.
func (t *sessionTable) byStream(stream string) *httpSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.streams[stream]
}

// relayed are the sessions here that go through the relay.
func (t *sessionTable) relayed() []*httpSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*httpSession, 0, len(t.streams))
	for _, hs := range t.streams {
		out = append(out, hs)
	}
	return out
}

// reserve makes room for one more session of client ("" when
// clients have no shares): below the cap and the client's share it
// counts one pending, at the client's share it closes the client's own
// least recently used idle session, at the cap anyone's, and with none
// idle it fails with errTooManySessions. The caller takes the pending one
// back once the session is registered or not made (see add).
func (t *sessionTable) reserve(client string) error {
	t.mu.Lock()
	var victim *httpSession
	if client != "" {
		n := t.pendingBy[client]
		var own *httpSession
		var ownSeen time.Time
		for _, hs := range t.sessions {
			if hs.client != client {
				continue
			}
			n++
			if idle, seen := hs.idle(); idle && (own == nil || seen.Before(ownSeen)) {
				own, ownSeen = hs, seen
			}
		}
		if n >= t.shares.Sessions() {
			if own == nil {
				t.mu.Unlock()
				return errTooManySessions
			}
			victim = own
			delete(t.sessions, victim.id)
		}
	}
	if victim == nil && len(t.sessions)+t.pending >= t.max {
		var victimSeen time.Time
		for _, hs := range t.sessions {
			idle, seen := hs.idle()
			if idle && (victim == nil || seen.Before(victimSeen)) {
				victim, victimSeen = hs, seen
			}
		}
		if victim == nil {
			t.mu.Unlock()
			return errTooManySessions
		}
		delete(t.sessions, victim.id)
	}
	t.pending++
	if client != "" {
		t.pendingBy[client]++
	}
	t.mu.Unlock()
	if victim != nil {
		t.logger.Info("closing the least recently used idle HTTP session: at the session cap, or its client's share of it", "session", victim.id, "max_sessions", t.max)
		victim.end()
	}
	return nil
}

// unreserveLocked takes back the pending session of client that
// reserve counted. t.mu is held.
func (t *sessionTable) unreserveLocked(client string) {
	t.pending--
	if client != "" {
		if t.pendingBy[client]--; t.pendingBy[client] <= 0 {
			delete(t.pendingBy, client)
		}
	}
}

// add takes back the pending session of hs's client that reserve
// counted and, unless err is set or the face is closing (errClosed),
// registers hs, once start has run (under the table's lock: a session
// is found only once it is started).
func (t *sessionTable) add(hs *httpSession, err error, start func()) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.unreserveLocked(hs.client)
	if err == nil && t.closed {
		err = errClosed
	}
	if err != nil {
		return err
	}
	start()
	t.sessions[hs.id] = hs
	if hs.stream != "" {
		t.streams[hs.stream] = hs
	}
	return nil
}

// close ends every session and refuses more.
func (t *sessionTable) close() {
	t.mu.Lock()
	t.closed = true
	sessions := t.sessions
	t.sessions, t.streams = map[string]*httpSession{}, map[string]*httpSession{}
	t.mu.Unlock()
	for _, hs := range sessions {
		hs.end()
	}
}

// janitor ends sessions that have been idle too long: clients that went
// away without DELETE. It returns when stop is closed.
func (t *sessionTable) janitor(stop <-chan struct{}) {
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		t.mu.Lock()
		var idle []*httpSession
		for _, hs := range t.sessions {
			if hs.idleSince(time.Now().Add(-idleSession)) {
				idle = append(idle, hs)
			}
		}
		t.mu.Unlock()
		for _, hs := range idle {
			t.logger.Info("closing idle HTTP session", "session", hs.id)
			t.drop(hs)
		}
	}
}
