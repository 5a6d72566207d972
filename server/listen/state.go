package listen

import (
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
)

// State is a session's side of its lists: what it was last answered
// with, whether it hears of changes on its listens alone, and its open
// listens.
type State struct {
	seen [Kinds]atomic.Uint64 // hash of each list as last answered, 0 before

	// modern is set once the client has sent a request of 2026-07-28 or
	// later: it hears of changes only on the listens it opens, never
	// unasked.
	modern atomic.Bool

	mu        sync.Mutex    // guards listens
	listens   []*listen     // open subscriptions/listen, at most maxSessionListens
	unheard   chan struct{} // closed when the client's input has ended: its listens end
	unheardMu sync.Once
}

// NewState returns the state of a new session.
func NewState() *State { return &State{unheard: make(chan struct{})} }

// Saw records the list the client was just answered with.
func (s *State) Saw(k Kind, hash uint64) { s.seen[k].Store(hash) }

// SetModern marks the session as one of 2026-07-28 or later: told of
// changes on its listens alone.
func (s *State) SetModern() { s.modern.Store(true) }

// Modern reports whether the session hears of changes on its listens
// alone.
func (s *State) Modern() bool { return s.modern.Load() }

// End ends the session's listens, with their results: the client's input
// has ended (stdin closed), and a listen, which only the client ends,
// would hold the session's last requests open.
func (s *State) End() { s.unheardMu.Do(func() { close(s.unheard) }) }

// Updated queues resources/updated of uri, with params, for each of the
// session's listens that names it.
func (s *State) Updated(uri string, params json.RawMessage) {
	for _, l := range s.list() {
		l.updated(uri, params)
	}
}

// add registers l with the session, unless it holds maxSessionListens
// already.
func (s *State) add(l *listen) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.listens) >= maxSessionListens {
		return false
	}
	s.listens = append(s.listens, l)
	return true
}

func (s *State) remove(l *listen) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.listens, l); i >= 0 {
		s.listens = slices.Delete(s.listens, i, i+1)
	}
}

// Len is how many listens the session holds open.
func (s *State) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.listens)
}

// list is the session's open listens.
func (s *State) list() []*listen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.listens)
}
