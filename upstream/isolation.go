package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A server with isolation: per-session gives each owner (a client
// session, see Server.Request) a connection of its own, dialled on the owner's
// first request and closed when Release says the owner is gone. What the
// server sends on that connection (sampling, elicitation and roots
// requests, progress, log messages) belongs to that owner beyond doubt.
// The server's shared connection still fetches the lists every client
// sees and serves requests that have no owner.

// maxIsolated caps the connections of one server kept for owners at once:
// each may be a child process, and a hub with a thousand HTTP sessions
// must not start a thousand copies of a server. Beyond it a request fails
// with an error that says why. settings.max_session_processes caps them
// across servers besides (see procSlots).
var maxIsolated = 32

// isolated is one owner's connection, or the dial that makes it.
type isolated struct {
	id     ConnID        // c's, known before it is dialled (see isolatedConn)
	ready  chan struct{} // closed when c or err is set
	client string        // the owner's client (ClientOf)
	c      *conn
	err    error
	busy   int       // requests on c being answered; guarded by the server's mu
	used   time.Time // when a request last began or ended; guarded likewise
}

// isolatedConn is owner's own connection to s, dialled on first use and
// waited for within ctx. done, called once the request on it is
// answered, marks the connection used (see releaseIdle). on, when not
// nil, is told the connection's id before it is waited for: the request
// is tracked on it from then (see RequestOn), so that what the server
// asks while it is dialled for that request (a roots/list once it is
// initialized) is that request's owner's.
func (s *Server) isolatedConn(ctx context.Context, owner Owner, on func(ConnID)) (c *conn, done func(), err error) {
	s.mu.Lock()
	if s.closing || s.ctx == nil {
		s.mu.Unlock()
		return nil, nil, fmt.Errorf("upstream %s is stopping: %w", s.Config.ID(), errUnavailable)
	}
	iso := s.isolated[owner]
	if iso == nil {
		if err := s.mayDialLocked(ClientOf(owner)); err != nil {
			s.mu.Unlock()
			return nil, nil, err
		}
		if s.isolated == nil {
			s.isolated = map[Owner]*isolated{}
		}
		iso = &isolated{id: newConnID(), ready: make(chan struct{}), client: ClientOf(owner)}
		s.isolated[owner] = iso
		life, connect := s.ctx, s.configuredConnect()
		if s.isoSched != nil {
			connect = s.isoSched.connectTimeout() // longer after a try that timed out
		}
		s.wg.Go(func() { s.dialIsolated(life, owner, iso, connect) })
	}
	iso.busy++
	iso.used = s.mgr.now()
	s.mu.Unlock()
	if on != nil {
		on(iso.id)
	}
	done = func() {
		s.mu.Lock()
		iso.busy--
		iso.used = s.mgr.now()
		s.mu.Unlock()
	}
	select {
	case <-iso.ready:
	case <-ctx.Done():
		done()
		return nil, nil, ctx.Err()
	}
	if iso.err != nil {
		done()
		return nil, nil, fmt.Errorf("upstream %s: connect for this client session: %w", s.Config.ID(), iso.err)
	}
	return iso.c, done, nil
}

// mayDialLocked says why an owner of client may not have a connection of
// its own dialled now, or nil and takes one of the hub's slots for it
// (given back by dialIsolated once that connection is gone). s.mu is held.
func (s *Server) mayDialLocked(client string) error {
	if len(s.isolated) >= maxIsolated {
		return fmt.Errorf("upstream %s: %d client sessions have connections of their own to it already (isolation: per-session allows %d at once); try again when one ends: %w",
			s.Config.ID(), maxIsolated, maxIsolated, errUnavailable)
	}
	if limit := s.mgr.procs.shareOf(client, maxIsolated); limit < maxIsolated {
		n := 0
		for _, iso := range s.isolated {
			if iso.client == client {
				n++
			}
		}
		if n >= limit {
			return fmt.Errorf("upstream %s: this client's sessions have %d connections of their own to it already, its share (%d of %d, http.client_share); try again when one ends: %w",
				s.Config.ID(), n, limit, maxIsolated, errUnavailable)
		}
	}
	if s.isoFail != nil {
		if wait := s.isoRetry.Sub(s.mgr.now()); wait > 0 {
			return fmt.Errorf("upstream %s: connect for this client session: %w (tried again in %s at the earliest)", s.Config.ID(), s.isoFail, wait.Round(time.Millisecond))
		}
	}
	if err := s.mgr.procs.take(client); err != nil {
		return fmt.Errorf("upstream %s: %w", s.Config.ID(), err)
	}
	return nil
}

// dialFailedLocked notes that a connection of an owner's own failed to
// start. A try that timed out gives the next one longer, whoever's it
// was: how slow the server is to start is the server's (a user's own
// connection to a slow server comes up as the shared one does). Beyond
// that, for a session's own connection (not a user's: one user's sign-in
// is no one else's wait) no owner dials again before the schedule's wait
// has passed, and their calls are answered with err meanwhile; failures
// of tries that began before that wait was set (dialled together) are one
// failure, not several steps of the backoff. s.mu is held.
func (s *Server) dialFailedLocked(err error, forUser bool) {
	if s.isoSched == nil {
		s.isoSched = newSchedule(s.Config.Retry, s.configuredConnect())
	}
	to, timedOut := errors.AsType[*connectTimeout](err)
	if timedOut {
		to.next = s.isoSched.timedOut(to.within) // the next try waits longer
	}
	if forUser {
		if timedOut { // no backoff: the user's next call dials again (see connectTimeout.Error)
			to.again = "the user's next call tries again"
		}
		return
	}
	if timedOut { // a package runner's (see connectTimeout.Error); the calls before the backoff has passed say how long it is (mayDialLocked)
		to.again = "a call after the backoff tries again"
	}
	s.isoFail = err
	if now := s.mgr.now(); !s.isoRetry.After(now) {
		s.isoRetry = now.Add(s.isoSched.NextBackOff())
	}
	s.logger.Warn("a client session's own connection failed to start (isolation: per-session); not tried again before the backoff", "err", err, "until", s.isoRetry)
}

// dialIsolated connects owner's connection, then watches it: when it ends
// it is forgotten, so that the owner's next request dials again. The
// hub's slot taken for it is given back once the connection has ended, or
// before a failed dial is reported. connect bounds its start (see
// schedule.timedOut).
func (s *Server) dialIsolated(life context.Context, owner Owner, iso *isolated, connect time.Duration) {
	caps := s.mgr.declared(owner)
	id := iso.id
	user, forUser := s.perUser(owner)
	h := serverHandlers{
		id:     id,
		notify: func(method string, params json.RawMessage) { s.isolatedNotification(owner, id, method, params) },
		request: func(ctx context.Context, related trackedCall, method string, params json.RawMessage) (json.RawMessage, error) {
			return s.request(ctx, related, owner, "", method, params)
		},
		paramHeaders:  s.paramHeaders,
		signInIgnored: s.signInIgnored(user), // "" but for a user's own connection
		// stderr: each child its own budget, not the server's: one
		// session's chatty child must not silence the others' (their
		// restarts are held back by isoRetry).
	}
	if forUser { // shared by the user's sessions: routed as the shared connection's, to that user's sessions alone
		h.notify = func(method string, params json.RawMessage) { s.notification(id, user, method, params) }
		h.request = func(ctx context.Context, related trackedCall, method string, params json.RawMessage) (json.RawMessage, error) {
			return s.request(withConn(ctx, id), related, nil, user, method, params)
		}
	}
	c, err := dial(life, s.Config, s.settings, connect, caps, s.tokensFor(owner), s.logger.With("isolated", true), h)
	s.mu.Lock()
	switch {
	case err != nil:
		iso.err = userAuthError(owner, s, err)
		if life.Err() == nil {
			s.dialFailedLocked(err, forUser)
		}
	case s.closing || s.isolated[owner] != iso:
		// Closed or released while dialling.
		iso.err = errors.New("the client session ended")
	default:
		iso.c = c
		if s.isoSched != nil {
			// The connect timeout stays: owners' connections start again
			// and again (each new user or session, each after an idle
			// close), and one that came up after a longer wait says the
			// server needs it (bounded by maxConnectFactor); going back to
			// the configured one would cut every other start off.
			s.isoSched.resetBackoff()
		}
		s.isoFail = nil
		if level := s.mgr.LogLevel(); level != "" {
			s.setLogLevel(life, c, level)
		}
	}
	if iso.err != nil && s.isolated[owner] == iso {
		delete(s.isolated, owner)
	}
	s.mu.Unlock()
	if iso.c == nil {
		if c == nil { // failed: no process left
			s.mgr.procs.give(iso.client)
			close(iso.ready)
			return
		}
		close(iso.ready)
		c.close()
		s.mgr.procs.give(iso.client)
		return
	}
	defer s.mgr.procs.give(iso.client)
	close(iso.ready)
	if forUser {
		s.logger.Info("connected for one user (auth: per-user)", "protocol", c.version)
	} else {
		s.logger.Info("connected for one client session (isolation: per-session)", "protocol", c.version)
	}
	select {
	case <-c.exited():
		s.logger.Warn("a client session's own connection ended", "err", c.err())
	case <-life.Done():
	}
	s.forgetIsolated(owner, iso)
}

// forgetIsolated closes iso's connection if it is still owner's (release
// closes one it took away).
func (s *Server) forgetIsolated(owner Owner, iso *isolated) {
	s.mu.Lock()
	mine := s.isolated[owner] == iso
	if mine {
		delete(s.isolated, owner)
	}
	s.mu.Unlock()
	if mine {
		iso.c.close()
	}
}

// release closes owner's connection, if it has one, in the background.
func (s *Server) release(owner Owner) {
	s.mu.Lock()
	defer s.mu.Unlock()
	iso := s.isolated[owner]
	if iso == nil || s.closing {
		return // closing closes it
	}
	delete(s.isolated, owner)
	s.wg.Go(func() {
		<-iso.ready
		if iso.c != nil {
			iso.c.close()
		}
	})
}

// releaseIdle closes the owners' connections that have had no request
// since cutoff: a session abandoned without a goodbye does not keep its
// processes for as long as the session itself lives; its next call dials
// again.
func (s *Server) releaseIdle(cutoff time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return
	}
	for owner, iso := range s.isolated {
		if iso.c == nil || iso.busy > 0 || !iso.used.Before(cutoff) {
			continue
		}
		delete(s.isolated, owner)
		s.logger.Info("closing a client session's own connection: no request on it for a while", "idle", s.mgr.now().Sub(iso.used).Round(time.Second))
		s.wg.Go(iso.c.close)
	}
}

// connsLocked are the server's live connections: the shared one and the
// owners' own. s.mu is held.
func (s *Server) connsLocked() []*conn {
	var conns []*conn
	if s.conn != nil {
		conns = append(conns, s.conn)
	}
	for _, iso := range s.isolated {
		if iso.c != nil {
			conns = append(conns, iso.c)
		}
	}
	return conns
}

// Isolated is how many client sessions have a connection of their own to
// the server now.
func (s *Server) Isolated() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.isolated)
}

// isolatedNotification handles a notification on an owner's connection.
// Its lists are not the ones clients see (the shared connection's are),
// so a list_changed on it is not followed; anything else goes to the hub
// marked as the owner's.
func (s *Server) isolatedNotification(owner Owner, id ConnID, method string, params json.RawMessage) {
	if _, ok := listChanged(method); ok {
		return
	}
	ctx, _, _, _ := s.callContext(withConn(context.Background(), id), trackedCall{}, owner)
	s.mgr.emit(Event{Kind: EventNotification, Server: s, Method: method, Params: params, Context: ctx, Owner: owner, OwnConn: true})
}

// perSession reports whether requests of owner go on a connection of
// their own, and the key of that connection among s.isolated.
func (s *Server) perSession(owner Owner) (Owner, bool) {
	if u, ok := s.perUser(owner); ok {
		return u, true
	}
	if s.Config.Isolation != config.IsolationPerSession {
		return nil, false
	}
	return owner, owner != nil
}

// Release tells every server that owner (a client session) is gone: the
// connections it had of its own are closed.
func (m *Manager) Release(owner Owner) {
	for _, s := range m.Servers() {
		s.release(owner)
	}
}
