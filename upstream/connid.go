package upstream

import (
	"context"
	"errors"
	"sync/atomic"
)

// ConnID names one connection to a server: the shared one, a reconnection
// after it ended, or one client session's own (isolation: per-session).
// No two connections the process makes share one, so what a server
// numbers per connection (its task ids) is told apart by (ConnID, id)
// across servers, sessions and restarts. Zero names none.
type ConnID uint64

// connIDs hands out ConnIDs, from 1.
var connIDs atomic.Uint64

func newConnID() ConnID { return ConnID(connIDs.Add(1)) }

// ErrConnGone is Request's error when the connection OnConn named is no
// longer the one it would send on.
var ErrConnGone = errors.New("the connection it was made on has ended")

type (
	connKey     struct{} // the ConnID an Event's message came on
	connNoteKey struct{} // where Request records the ConnID that answered
	connWantKey struct{} // the only ConnID Request may send on
)

// ConnOf is the connection an Event's message came on (see Event.Context),
// or zero.
func ConnOf(ctx context.Context) ConnID {
	id, _ := ctx.Value(connKey{}).(ConnID)
	return id
}

// withConn marks an Event's context with the connection its message came on.
func withConn(ctx context.Context, id ConnID) context.Context {
	return context.WithValue(ctx, connKey{}, id)
}

// NoteConn marks ctx so that Server.Request, given it, records in *id the
// connection it sent on (zero when it sent on none). *id is written
// before Request returns, on the caller's goroutine.
func NoteConn(ctx context.Context, id *ConnID) context.Context {
	return context.WithValue(ctx, connNoteKey{}, id)
}

// OnConn marks ctx so that Server.Request, given it, sends only on the
// connection id: when the connection it would use is another (the one id
// named ended, the server restarted since), it fails with ErrConnGone
// and sends nothing.
func OnConn(ctx context.Context, id ConnID) context.Context {
	return context.WithValue(ctx, connWantKey{}, id)
}

// noteConn records c's id where ctx asks for it (see NoteConn).
func noteConn(ctx context.Context, c *conn) {
	if p, ok := ctx.Value(connNoteKey{}).(*ConnID); ok {
		*p = 0
		if c != nil {
			*p = c.id
		}
	}
}

// wrongConn reports whether ctx asks for a connection other than c (see
// OnConn).
func wrongConn(ctx context.Context, c *conn) bool {
	want, ok := ctx.Value(connWantKey{}).(ConnID)
	return ok && c.id != want
}
