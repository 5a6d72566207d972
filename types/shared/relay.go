package shared

import (
	"context"
	"time"
)

// Relay is what lets every replica serve one client's HTTP session
// (store: with http.session_keys), whichever replica each request of it
// reaches: messages between replicas, the events of a session's GET
// stream kept for whichever replica holds that stream, and the sessions
// ended by DELETE.
type Relay interface {
	// Publish sends payload to every replica's Subscribe of channel, this
	// replica's included, in the order published. A payload of any size
	// is taken (a store whose notices are small keeps a large one aside
	// for a short while, to be read by its key).
	Publish(ctx context.Context, channel, payload string) error
	// Subscribe calls fn with each payload published on channel, one at
	// a time, until ctx ends; and fn("") each time it starts listening
	// (the first time too: what was published before was not heard), and once payloads that came faster than fn took them were dropped
	// (payloads have been, or may have been, missed). It holds one connection
	// while it runs. fn must not wait long: it holds up the rest.
	Subscribe(ctx context.Context, channel string, fn func(payload string))
	// AppendEvents keeps each event as the next of its stream, numbered
	// by the store (so that the numbers of a stream go up whichever
	// replica appends), forgets the oldest of a stream beyond MaxEvents or
	// MaxEventBytes and of all streams beyond MaxEventsTotal, and then
	// publishes each event's Notice on channel, followed by a space and
	// the last number of its stream (once for equal notices of one
	// call), all in one transaction. It returns the numbers given, in
	// order. An event over MaxEventBytes is numbered, not kept.
	AppendEvents(ctx context.Context, channel string, events []NewEvent) ([]uint64, error)
	// Events are the kept events of stream numbered after seq, oldest
	// first (at most MaxEvents), and the last number stream gave (0: none).
	Events(ctx context.Context, stream string, after uint64) (events []Event, last uint64, err error)
	// End records key, the name of a session's stream, as ended until
	// until, and forgets the stream's events; Ended reports whether it is.
	End(ctx context.Context, key string, until time.Time) error
	Ended(ctx context.Context, key string) (bool, error)
}

// The bounds of the events a Relay keeps: those of the HTTP face's
// in-memory log (server/mcphttp/eventlog.go).
const (
	// MaxEvents is how many events of a stream are kept.
	MaxEvents = 256
	// MaxEventBytes is how many bytes of a stream's events are kept.
	MaxEventBytes = 1 << 20
	// MaxEventsTotal is how many bytes of events are kept for every
	// stream together: beyond it the oldest go, whichever stream's.
	MaxEventsTotal = 64 << 20
)

// NewEvent is an event to append to Stream.
type NewEvent struct {
	Stream string
	Msg    []byte
	// Note marks a notification (a client that is behind may lose it).
	Note bool
	// Notice is published once the event is kept (see AppendEvents).
	Notice string
}

// Event is a kept event.
type Event struct {
	Seq  uint64
	Msg  []byte
	Note bool
}
