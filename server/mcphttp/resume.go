package mcphttp

import (
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/server/httpguard"
	"github.com/dynamic-mcp/dynamic-mcp/server/signin"
)

// Sessions any replica resumes (http.session_keys). A sealed session's
// Mcp-Session-Id is its small state (seal.go); a request bearing one that
// this process has no live session for (another replica made it, or this
// one restarted) opens the session again from it, as initialize left it,
// and the client does not notice. What is not in the id is not resumed:
// requests in flight on the replica that made it, the notifications
// queued for its GET stream (the client opens its GET stream again),
// resource subscriptions and a log level set after initialize (these are
// per replica: the spec does not let a session's id change, so the id
// cannot follow them). With a store (Options.Store), the GET stream's
// events, the client's answers to the hub's requests, its cancellations
// and log level, and DELETE reach every replica (server/relay).

// maxEnded bounds the sealed sessions remembered as ended by DELETE.
const maxEnded = 4096

// endedSessions are the nonces of sealed sessions ended by DELETE here,
// until their ids expire, so that such an id is 404 here as the spec
// asks, instead of being resumed. Without a store, another replica does
// not know of it: it would resume the session (there is no session table
// to tell it); with one, the store tells it (server/relay).
type endedSessions struct {
	mu    sync.Mutex // guards until and order
	until map[string]time.Time
	order []string // oldest first; the oldest is forgotten when full
}

func (e *endedSessions) add(nonce string, until time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.until == nil {
		e.until = map[string]time.Time{}
	}
	if len(e.order) >= maxEnded {
		delete(e.until, e.order[0])
		e.order = e.order[1:]
	}
	e.until[nonce] = until
	e.order = append(e.order, nonce)
}

func (e *endedSessions) has(nonce string, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.until[nonce]
	return ok && now.Before(t)
}

// sealedSession is the session a sealed id names for the request's
// credential at its URL: the live one, else one resumed from the id.
// status is the HTTP status to refuse with when there is none: 404 for an
// id that does not open (tampered, another credential's, expired, its key
// dropped) or a session ended here, 503 when no session can be made now.
func (s *Server) sealedSession(r *http.Request, id string) (hs *httpSession, status int) {
	owner := httpguard.CredentialOf(r.Context())
	st, err := s.sealer.open(id, owner, s.now())
	if err != nil {
		// Not sealed: a session whose id could not be sealed, or a legacy
		// SSE one, is found by its plain id, as without keys.
		if hs := s.sessions.owned(id, owner); hs != nil && hs.profile == profileOf(r) {
			return hs, 0
		}
		return nil, http.StatusNotFound
	}
	if st.URLProfile != profileOf(r) {
		return nil, http.StatusNotFound
	}
	if hs := s.sessions.owned(st.Nonce, owner); hs != nil {
		return hs, 0
	}
	stream := s.sealer.streamName(st.key, st.Nonce)
	// The store is asked before resumeMu is taken: a store that is slow
	// to answer holds up this session's request, not every resume here.
	if s.relay != nil && s.relay.Ended(stream) {
		return nil, http.StatusNotFound
	}
	hs, fresh, status := s.resume(r, st, owner, stream)
	if !fresh {
		return hs, status
	}
	// The store answered "not ended" before the session was registered
	// here; a DELETE at another replica since then may not have been
	// heard (its notice is lost to a replica whose connection to the
	// store broke at that moment). Asked again now that any later notice
	// ends the session, and outside resumeMu, as above.
	if s.relay != nil && s.relay.Ended(stream) {
		s.sessions.drop(hs)
		return nil, http.StatusNotFound
	}
	s.logger.Info("resumed an HTTP session from its id", "session", st.Nonce, "client", st.State.ClientInfo.Name, "addr", r.RemoteAddr)
	return hs, 0
}

// resume is sealedSession's part under resumeMu: the session of st (a
// sealed id's state, opened for owner; its GET stream named stream) live
// here by now, or none when it is known to be ended, or it made here now
// (fresh).
func (s *Server) resume(r *http.Request, st sealedState, owner, stream string) (hs *httpSession, fresh bool, status int) {
	s.resumeMu.Lock()
	defer s.resumeMu.Unlock()
	if hs := s.sessions.owned(st.Nonce, owner); hs != nil {
		return hs, false, 0 // resumed by a request of the same session meanwhile
	}
	if s.ended.has(st.Nonce, s.now()) || s.relay != nil && s.deleted.has(stream, s.now()) {
		return nil, false, http.StatusNotFound
	}
	hs, err := s.startSession(st.Nonce, "streamable-http", owner, st.URLProfile, signin.PublicBase(r), st.State.Identity, func(hs *httpSession) (*server.Session, error) {
		relayTo(s, hs, st.key)
		return s.hub.OpenSession(server.SessionOptions{ID: hs.id, Transport: "streamable-http", State: &st.State, Peer: hs, SignIn: hs})
	})
	if err != nil {
		s.logger.Warn("could not resume an HTTP session", "session", st.Nonce, "err", err)
		if errors.Is(err, errTooManySessions) || errors.Is(err, errClosed) {
			return nil, false, http.StatusServiceUnavailable
		}
		return nil, false, http.StatusNotFound
	}
	if s.relay != nil && s.deleted.has(stream, s.now()) {
		// DELETEd at another replica while it resumed here: the notice
		// came before the session was registered, to be ended by it.
		s.sessions.drop(hs)
		return nil, false, http.StatusNotFound
	}
	return hs, true, 0
}

// sealedID is the Mcp-Session-Id of hs, a session of owner that
// initialize has just set up: its state sealed, at now.
func (sl *sealer) sealedID(hs *httpSession, now time.Time) (string, error) {
	return sl.sealWithin(sealedState{Nonce: hs.id, Expires: now.Add(sealedLifetime).Unix(), URLProfile: hs.profile,
		State: hs.sess.State()}, hs.owner)
}

// sessionHeader is header with the session's id in it, sealed once
// initialize has set the state up, when ids are sealed (sl is not nil;
// header is that of an initialize's answer). now is the clock of the
// sealed ids' expiry.
func (sl *sealer) sessionHeader(hs *httpSession, header http.Header, now func() time.Time, logger *slog.Logger) http.Header {
	if sl == nil || header.Get(headerSessionID) == "" {
		return header
	}
	id, err := sl.sealedID(hs, now())
	if err != nil {
		logger.Error("could not seal a session id; the session stays on this replica", "session", hs.id, "err", err)
		return header
	}
	header.Set(headerSessionID, id)
	return header
}
