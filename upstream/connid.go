package upstream

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/dynamic-mcp/dynamic-mcp/types/owner"
)

// ConnID names one connection to a server (types/owner, which the call
// contract shares).
type ConnID = owner.ConnID

// connIDs hands out ConnIDs, from 1.
var connIDs atomic.Uint64

func newConnID() ConnID { return ConnID(connIDs.Add(1)) }

// ErrConnGone is RequestOn's error when the connection it was given is no
// longer the one it would send on.
var ErrConnGone = errors.New("the connection it was made on has ended")

type connKey struct{} // the ConnID an Event's message came on

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
