package upstream

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/owner"
)

// A server with auth: per-user gives each calling user (an owner with a
// UserKey) a connection of their own, made with their own
// sign-in from the token store (auth.Store.ForUser) and never with the
// shared one or another user's. It reuses the connections of isolation:
// per-session (isolation.go), keyed by the user instead of the session, so
// it is bounded by maxIsolated and closed when idle likewise; the user's
// sessions share it. A user with no sign-in is answered with a
// *SignInRequired before anything is dialled. The server's shared
// connection (the hub's own sign-in) fetches the lists and serves owners
// without a user (stdio: one user).

// Owner is whose request a request to a server is (see Server.Request;
// types/owner, which the call contract shares).
type Owner = owner.Owner

// userConn is the key of a user's own connection among a server's
// isolated ones: the owner of what comes on it.
type userConn string

// UserKey is the user's key: a user's own connection is the user's.
func (u userConn) UserKey() string { return string(u) }

// Client is "": a user's own connection is no client's (see Owner).
func (userConn) Client() string { return "" }

// SessionID is "": a user's own connection is no session.
func (userConn) SessionID() string { return "" }

// ClientCapabilities are unknown: a user's own connection declares the
// manager's.
func (userConn) ClientCapabilities() (mcp.ClientCapabilities, bool) {
	return mcp.ClientCapabilities{}, false
}

// SignInRequired says a per-user server has no usable sign-in of the
// calling user's: the user must sign in (through the hub's HTTP face).
type SignInRequired struct {
	Server string // the server's ID (group/name, or group)
	User   string // the caller's key
	Reason string // why, when a sign-in on file was refused
}

func (e *SignInRequired) Error() string {
	msg := "upstream " + e.Server + " needs you to sign in to it (auth: per-user)"
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// perUser reports whether owner's requests go on the calling user's own
// connection to s, and that user's key. Of a key of s's own connections
// (perSession's), it reports whether the key is a user's: what a user's
// connection is told apart by, never by asserting the key's type.
func (s *Server) perUser(owner Owner) (userConn, bool) {
	if !s.Config.PerUser() || owner == nil {
		return "", false
	}
	k := owner.UserKey()
	return userConn(k), k != ""
}

// userSignedIn is nil when user has a connection to s or a sign-in on
// file to make one with, else a *SignInRequired. It reads the store
// outside s.mu.
func (s *Server) userSignedIn(owner Owner) error {
	u, ok := s.perUser(owner)
	if !ok {
		return nil
	}
	s.mu.Lock()
	_, connected := s.isolated[u]
	s.mu.Unlock()
	if connected {
		return nil
	}
	_, err := s.mgr.tokens.ForUser(string(u)).Load(s.Config.ID(), s.Config.URL)
	if errors.Is(err, auth.ErrNoToken) {
		return &SignInRequired{Server: s.Config.ID(), User: string(u)}
	}
	return err
}

// userAuthError is err, for a user's own connection whose sign-in the
// server refused (and that could not be renewed), a *SignInRequired.
func userAuthError(owner Owner, s *Server, err error) error {
	u, ok := s.perUser(owner)
	if !ok || err == nil {
		return err
	}
	var rpc *RPCError
	if errors.As(err, &rpc) {
		return err
	}
	var si signInError
	if errors.As(err, &si) {
		return &SignInRequired{Server: s.Config.ID(), User: string(u), Reason: fmt.Sprintf("the server refused your sign-in (%s)", firstClause(si.Error()))}
	}
	return err
}

// signInError is a refusal the user ends by signing in (again): its text
// names `dynamic-mcp auth login` for the shared sign-in, and a user's own
// connection turns it into a *SignInRequired (userAuthError).
type signInError struct{ error }

func (e signInError) Unwrap() error { return e.error }

// firstClause is msg up to its first ": run:" (or "; sign in again
// with:") hint, which names a command for the shared sign-in, not the
// user's.
func firstClause(msg string) string {
	for _, hint := range []string{": run:", "; sign in again with:"} {
		if i := strings.Index(msg, hint); i >= 0 {
			msg = msg[:i]
		}
	}
	return msg
}

// tokensFor is the token store owner's connection is made with: the
// user's own records for a user's connection, else the shared ones.
func (s *Server) tokensFor(owner Owner) *auth.Store {
	if u, ok := s.perUser(owner); ok && s.mgr.tokens != nil {
		return s.mgr.tokens.ForUser(string(u))
	}
	return s.mgr.tokens
}

// PerUserServer is the config of the server with id that has auth:
// per-user, or nil.
func (m *Manager) PerUserServer(id string) *config.Server {
	for _, s := range m.Servers() {
		if s.Config.ID() == id && s.Config.PerUser() {
			return s.Config
		}
	}
	return nil
}

// UserTokens is the token store of user's own sign-ins.
func (m *Manager) UserTokens(user string) *auth.Store { return m.tokens.ForUser(user) }

// BeginUserSignIn starts a sign-in of user to the per-user server with id,
// whose redirect is the HTTP face's callback URL. A client the hub
// registers for it is registered once and shared by every user's sign-in
// (auth.Clients).
func (m *Manager) BeginUserSignIn(ctx context.Context, id, user, redirect string) (*auth.WebFlow, error) {
	cfg := m.PerUserServer(id)
	if cfg == nil {
		return nil, fmt.Errorf("no server %q with auth: per-user", id)
	}
	prev, _ := m.UserTokens(user).Load(id, cfg.URL)
	return auth.BeginWeb(ctx, id, cfg.URL, redirect, auth.LoginOptions{
		ClientID: cfg.OAuth.ClientID, ClientSecret: cfg.OAuth.ClientSecret, AuthMethod: cfg.OAuth.AuthMethod,
		ClientMetadataURL: cfg.OAuth.ClientMetadataURL, ExpectedIssuer: cfg.OAuth.ExpectedIssuer,
		Scopes: cfg.OAuth.Scopes, Headers: cfg.Headers, Previous: prev, Clients: m.UserTokens(user).Clients(id), Logger: m.logger,
	})
}

// SaveUserSignIn keeps rec as user's own sign-in (never the shared one).
func (m *Manager) SaveUserSignIn(user string, rec *auth.Record) error {
	return m.UserTokens(user).Save(rec)
}
