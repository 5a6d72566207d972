package jsonrpc

import (
	"context"
	"encoding/json"
)

// Relation is what a message a Conn writes relates to, for a Stream that
// sends each message where it belongs (the session stream of a downstream
// HTTP session: a request's answer, and what is sent while it is handled,
// go down the POST that brought it; the rest down the session's GET
// stream). A Conn hands it to Stream.Write in the write's ctx (RelationOf)
// when the stream is a Router.
type Relation struct {
	// ID is the id of the peer's request the message relates to: the
	// request it answers, or the request being handled when the message
	// was sent (a notification or a request of ours sent with the
	// handler's ctx). Nil: none.
	ID json.RawMessage
	// Answer says the message answers ID's request. A nil message with
	// Answer says the request ended unanswered (the peer cancelled it).
	Answer bool
	// Notification says the message is a notification: a stream with no
	// room for it may drop it.
	Notification bool
}

// A Router is a Stream that routes each message by its Relation: a Conn
// over it puts the request's id in each handler's ctx, gives every Write
// the message's Relation (RelationOf), writes one message a Write (never
// WriteBatch), and writes a nil message for a request that ends
// unanswered. A Router's Write never waits for the peer: it hands the
// message to whoever writes to the peer (an HTTP response's handler),
// which bounds that write itself; so a Conn arms no timer for it, and a
// handler writes its answer itself, waiting for a write under way rather
// than handing its answer to the writer.
type Router interface {
	Stream
	// Routes is a marker; it reports true.
	Routes() bool
}

type relationKey struct{}

// RelationOf is the Relation of the message being written, from the ctx
// a Conn passes to a Router's Write; the zero Relation in any other ctx.
// The ctx is valid during that Write only.
func RelationOf(ctx context.Context) Relation {
	if r, ok := ctx.Value(relationKey{}).(*Relation); ok {
		return *r
	}
	return Relation{}
}

type requestKey struct{}

// RelatedID is the id of the peer's request whose handler ctx is ctx (or
// a ctx derived from it), as a Conn over a Router sets it: what a handler
// sends with it relates to that request. Nil otherwise.
func RelatedID(ctx context.Context) json.RawMessage {
	if r, ok := ctx.Value(relationKey{}).(*Relation); ok {
		return r.ID
	}
	if r, ok := ctx.Value(requestKey{}).(*inflightReq); ok {
		return r.id
	}
	return nil
}
