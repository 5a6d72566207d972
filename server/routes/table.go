// Package routes is the hub's table of client sessions and where each
// thing an upstream says goes: its notifications (progress to the call
// that asked for it, log messages by each client's level, resource
// updates to the sessions subscribed), its requests to a client
// (sampling, elicitation, roots) and the resource subscriptions the
// sessions hold. The session type is the hub's (server); the table works
// on what Session says of it, and on the hub's funcs given in Options.
package routes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Session is one client session as the table sees it; the hub's clients
// (its sessions, and the callers of requests that came without one)
// implement it.
type Session interface {
	// ID names the session (unique among open sessions).
	ID() string
	// Dropped is how many notifications the client had no room for.
	Dropped() uint64
	// End marks the session ended, which stops what the hub does for it.
	End()
	// Notify sends the client a notification (encoded whole); ctx is the
	// request it belongs to. It never blocks.
	Notify(ctx context.Context, msg []byte)
	// Request sends the client a request and waits for its answer within
	// ctx.
	Request(ctx context.Context, method string, params any) (json.RawMessage, error)
	// GetLogLevel is the least severe level of log message the client
	// wants.
	GetLogLevel() mcp.LoggingLevel
	// GetClientCapabilities are the capabilities the client stated.
	GetClientCapabilities() mcp.ClientCapabilities
	// Modern reports whether the client speaks 2026-07-28 or later: it
	// hears of changes only on the listens it opens, never unasked.
	Modern() bool
	// Updated tells the session's open listens that uri changed.
	Updated(uri string, params json.RawMessage)
	// Routing is what the table keeps in the session.
	Routing() *Entry
	// A session is the owner (upstream.Owner) of its calls upstream: its
	// UserKey is the signed-in user it is, "" for none (a local client, a
	// caller without identity: see For), and its SessionID its ID, by
	// which the table finds the session what comes back is for (Of).
	upstream.Owner
}

// Keyed is a Session the table keys its maps by: comparable, as the
// hub's client type is (an interface of pointers), its zero value no
// session.
type Keyed interface {
	comparable
	Session
}

// Entry is what the table keeps of a session in the session itself.
type Entry struct {
	rootsPending atomic.Bool // a roots/list_changed waits to go upstream
	// subscriptions counts the resource URIs the session listens to;
	// guarded by the table's lock (see MaxSessionSubscriptions).
	subscriptions int
}

// Options are what the table needs of the hub around it.
type Options[S Keyed] struct {
	Logger  *slog.Logger
	Manager *upstream.Manager
	// Spawn runs f on a goroutine the hub's Close waits for, and reports
	// whether it did (nothing once Close has begun). Stop is closed at
	// Close.
	Spawn func(f func()) bool
	Stop  <-chan struct{}
	// Observer is the traffic observer now, nil for none.
	Observer func() traffic.Observer
	// Redact hides the resolved secrets of the current config in params.
	Redact func(params json.RawMessage) json.RawMessage
	// HidesResource reports whether the current view hides uri.
	HidesResource func(uri string) bool
	// Unsubscribe sends resources/unsubscribe for uri to s, on its shared
	// connection, bounded by the list timeout and cancelled at Close.
	Unsubscribe func(s *upstream.Server, uri string) error
	// Ask puts an upstream's request e (its params, redacted, are params)
	// to a 2026-07-28 client in the next round of the call the hub holds
	// for e's owner to e's server; ok is false when it holds none.
	Ask func(ctx context.Context, e ServerRequest, params json.RawMessage) (res json.RawMessage, ok bool, err error)
	// TaskStatus is the session that owns the task an upstream's
	// notifications/tasks/status (which came on the connection ctx names)
	// is about, with the params to send it; ok is false for none.
	TaskStatus func(ctx context.Context, s *upstream.Server, params json.RawMessage) (owner S, out json.RawMessage, ok bool)
	// Ended forgets what else the hub keeps of a session that ended (its
	// tasks, its own upstream connections, rate counters, grants).
	Ended func(sess S)
	// Describe is what the hub knows of a session (see Sessions).
	Describe func(sess S) SessionInfo
}

// Table is the hub's table of client sessions (see the package doc).
type Table[S Keyed] struct {
	opts Options[S]

	mu       sync.Mutex                  // guards the maps
	sessions map[string]S                // by id
	unlisted map[string]S                // by id: sessions of one request each (AddUnlisted)
	progress map[string]progressRoute[S] // hub progress token -> the call's session
	held     map[string]*heldProgress[S] // a held call's token -> the round carrying it (see HoldProgress)
	subs     map[string]*subscription[S] // by resource URI
	nextTok  uint64
	// droppedGone counts the notifications dropped for sessions that
	// ended, so that the hub's total never goes down (see Dropped).
	droppedGone uint64
	// unsubscribing holds a token for each upstream unsubscribe being
	// sent for a session that ended: they are bounded in number.
	unsubscribing chan struct{}
}

// New makes the table.
func New[S Keyed](opts Options[S]) *Table[S] {
	return &Table[S]{
		opts:          opts,
		sessions:      map[string]S{},
		unlisted:      map[string]S{},
		progress:      map[string]progressRoute[S]{},
		held:          map[string]*heldProgress[S]{},
		subs:          map[string]*subscription[S]{},
		unsubscribing: make(chan struct{}, maxUnsubscribing),
	}
}

// ErrSessionExists refuses a session whose id an open session has.
var ErrSessionExists = errors.New("session already exists")

// Add registers a new client session with the hub.
func (t *Table[S]) Add(sess S) error { return t.add(t.sessions, sess) }

// AddUnlisted registers sess, the client of one request a face answers
// without a session of the client's (a 2026-07-28 request that came
// without Mcp-Session-Id), for Of alone until Remove: what comes back
// for its call (progress, an upstream's request to the client, its
// tasks) finds it, but no list does (List, and so the sessions list,
// the inspector and what is sent to every session).
func (t *Table[S]) AddUnlisted(sess S) error { return t.add(t.unlisted, sess) }

// add keeps sess in m (the listed sessions or the unlisted), by its id,
// unless m has a session of that id.
func (t *Table[S]) add(m map[string]S, sess S) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := m[sess.ID()]; ok {
		return fmt.Errorf("register session: %w", ErrSessionExists)
	}
	m[sess.ID()] = sess
	return nil
}

// Remove forgets a session that ended: its subscriptions go (and
// upstreams are unsubscribed where no one else listens), the hub's
// requests waiting on it fail, its requests in flight are cancelled, and
// the hub forgets the rest (Options.Ended).
func (t *Table[S]) Remove(sess S) {
	sess.End()
	t.mu.Lock()
	if t.sessions[sess.ID()] == sess {
		delete(t.sessions, sess.ID())
	}
	if t.unlisted[sess.ID()] == sess {
		delete(t.unlisted, sess.ID())
	}
	t.droppedGone += sess.Dropped()
	gone := map[string]*subscription[S]{} // the URIs no one listens to now
	for uri, sent := range t.subs {
		if sent.sessions[sess] && t.leave(uri, sent, sess) {
			gone[uri] = sent
		}
	}
	t.mu.Unlock()
	t.unsubscribeGone(gone)
	if t.opts.Ended != nil {
		t.opts.Ended(sess)
	}
}

// List is the open sessions.
func (t *Table[S]) List() []S {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]S, 0, len(t.sessions))
	for _, s := range t.sessions {
		out = append(out, s)
	}
	return out
}

// For is the client session a request from upstream belongs to: the one
// whose call it came during or whose own connection it came on
// (isolation: per-session), both of which the upstream package knows as
// the owner the call was made for (upstream.Event.Owner), else the only
// client there is of the owner's user. An owner that is a user's (a
// per-user connection, a held call of a signed-in caller) is never
// answered by another user's session: a server signed in as alice asks
// alice's client or none, even when bob's is the only one open.
// The zero S when there is none, as for an owner that is a session that
// ended (Of).
func (t *Table[S]) For(owner upstream.Owner) S {
	s, _ := t.pick(owner)
	return s
}

// pick is For, and whether there was no one session to pick because
// several could be the one (several of the owner's user's, or of anyone's
// for an owner of no user): a request then goes to none of them.
func (t *Table[S]) pick(owner upstream.Owner) (_ S, several bool) {
	if s, session := t.Of(owner); session {
		return s, false
	}
	user := ""
	if owner != nil {
		user = owner.UserKey()
	}
	var only, none S
	n := 0
	for _, s := range t.List() {
		if user == "" || s.UserKey() == user {
			only, n = s, n+1
		}
	}
	if n == 1 {
		return only, false
	}
	return none, n > 1
}

// Of is the open session owner is (upstream.Owner.SessionID), listed or
// not (AddUnlisted), and whether owner is a session at all: a session
// that ended is the zero S, as is any other owner (a held call, a user's
// own connection). Found by its id and held to be the owner itself,
// never another session that has its id since.
func (t *Table[S]) Of(owner upstream.Owner) (s S, session bool) {
	if owner == nil {
		return s, false
	}
	id := owner.SessionID()
	if id == "" {
		return s, false
	}
	t.mu.Lock()
	found, ok := t.sessions[id]
	if !ok || upstream.Owner(found) != owner {
		found, ok = t.unlisted[id]
	}
	t.mu.Unlock()
	if ok && upstream.Owner(found) == owner {
		s = found
	}
	return s, true
}

// notify sends sess a notification; ctx is the request it belongs to. It
// never blocks.
func notify[S Keyed](ctx context.Context, sess S, method string, params any) {
	p, err := jsonrpc.Params(params)
	if err == nil {
		sess.Notify(ctx, jsonrpc.EncodeNotification(method, p))
	}
}
