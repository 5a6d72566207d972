package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A server with isolation: per-session gives each owner (a client
// session, see WithOwner) a connection of its own, dialled on the owner's
// first request and closed when Release says the owner is gone. What the
// server sends on that connection (sampling, elicitation and roots
// requests, progress, log messages) belongs to that owner beyond doubt.
// The server's shared connection still fetches the lists every client
// sees and serves requests that have no owner.

// maxIsolated caps the connections of one server kept for owners at once:
// each may be a child process, and a hub with a thousand HTTP sessions
// must not start a thousand copies of a server. Beyond it a request fails
// with an error that says why.
var maxIsolated = 32

// isolated is one owner's connection, or the dial that makes it.
type isolated struct {
	ready chan struct{} // closed when c or err is set
	c     *conn
	err   error
}

// isolatedConn is owner's own connection to s, dialled on first use and
// waited for within ctx.
func (s *Server) isolatedConn(ctx context.Context, owner any) (*conn, error) {
	s.mu.Lock()
	if s.closing || s.ctx == nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("upstream %s is stopping: %w", s.Config.ID(), errUnavailable)
	}
	iso := s.isolated[owner]
	if iso == nil {
		if len(s.isolated) >= maxIsolated {
			s.mu.Unlock()
			return nil, fmt.Errorf("upstream %s: %d client sessions have connections of their own to it already (isolation: per-session allows %d at once); try again when one ends: %w",
				s.Config.ID(), maxIsolated, maxIsolated, errUnavailable)
		}
		if s.isolated == nil {
			s.isolated = map[any]*isolated{}
		}
		iso = &isolated{ready: make(chan struct{})}
		s.isolated[owner] = iso
		life := s.ctx
		s.wg.Go(func() { s.dialIsolated(life, owner, iso) })
	}
	s.mu.Unlock()
	select {
	case <-iso.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if iso.err != nil {
		return nil, fmt.Errorf("upstream %s: connect for this client session: %w", s.Config.ID(), iso.err)
	}
	return iso.c, nil
}

// dialIsolated connects owner's connection, then watches it: when it ends
// it is forgotten, so that the owner's next request dials again.
func (s *Server) dialIsolated(life context.Context, owner any, iso *isolated) {
	caps := s.mgr.declared(owner)
	id := newConnID()
	h := serverHandlers{
		id:     id,
		notify: func(method string, params json.RawMessage) { s.isolatedNotification(owner, id, method, params) },
		request: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			return s.request(WithOwner(ctx, owner), method, params)
		},
	}
	c, err := dial(life, s.Config, s.settings, caps, s.mgr.tokens, s.logger.With("isolated", true), h)
	s.mu.Lock()
	switch {
	case err != nil:
		iso.err = err
	case s.closing || s.isolated[owner] != iso:
		// Closed or released while dialling.
		iso.err = errors.New("the client session ended")
	default:
		iso.c = c
		if level := s.mgr.LogLevel(); level != "" {
			s.setLogLevel(life, c, level)
		}
	}
	if iso.err != nil && s.isolated[owner] == iso {
		delete(s.isolated, owner)
	}
	s.mu.Unlock()
	close(iso.ready)
	if iso.c == nil {
		if c != nil {
			c.close()
		}
		return
	}
	s.logger.Info("connected for one client session (isolation: per-session)", "protocol", c.version)
	select {
	case <-c.exited():
		s.logger.Warn("a client session's own connection ended", "err", c.err())
	case <-life.Done():
	}
	s.forgetIsolated(owner, iso)
}

// forgetIsolated closes iso's connection if it is still owner's (release
// closes one it took away).
func (s *Server) forgetIsolated(owner any, iso *isolated) {
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
func (s *Server) release(owner any) {
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
func (s *Server) isolatedNotification(owner any, id ConnID, method string, params json.RawMessage) {
	if _, ok := listChanged(method); ok {
		return
	}
	s.mgr.emit(Event{Kind: EventNotification, Server: s, Method: method, Params: params, Context: withConn(s.callContext(WithOwner(context.Background(), owner)), id)})
}

// perSession reports whether requests of ctx's owner go on a connection
// of their own, and whose.
func (s *Server) perSession(ctx context.Context) (any, bool) {
	if s.Config.Isolation != config.IsolationPerSession {
		return nil, false
	}
	owner := ctx.Value(ownerKey{})
	return owner, owner != nil
}

// Release tells every server that owner (a client session) is gone: the
// connections it had of its own are closed.
func (m *Manager) Release(owner any) {
	for _, s := range m.Servers() {
		s.release(owner)
	}
}

// OwnerOf is the owner ctx's requests were marked with (see WithOwner), or
// nil.
func OwnerOf(ctx context.Context) any { return ctx.Value(ownerKey{}) }
