package jsonrpc

import (
	"errors"
	"sync"
	"sync/atomic"
)

// Errors of sending.
var (
	// ErrClosed is returned for a message sent on a connection that has
	// ended; Conn.Err says why it ended.
	ErrClosed = errors.New("connection closed")
	// ErrDropped is returned for a notification a slow peer's outbox had
	// no room for.
	ErrDropped = errors.New("notification dropped: the peer is not reading fast enough")
)

// DefaultOutbox is how many notifications may wait for a slow peer before
// more are dropped.
const DefaultOutbox = 256

// Outbox is the bounded queue between everyone who sends a peer messages
// and the one goroutine that writes them. Sending never blocks: a
// notification that finds the queue holding limit notifications is
// dropped and counted; responses and requests are never dropped (a
// connection bounds them by its in-flight limits). Order is kept.
type Outbox struct {
	limit   int
	dropped atomic.Uint64

	mu     sync.Mutex // guards the fields below
	queue  [][]byte
	rels   []Relation // rels[i] is queue[i]'s
	notes  int        // notifications in queue
	bytes  int        // bytes in queue
	closed bool       // no more sends; what is queued can still be taken
	// spareQ and spareR are a written batch's slices, given back
	// (Recycle), emptied: the next take's queue.
	spareQ [][]byte
	spareR []Relation
	wake   chan struct{}
	taken  chan struct{} // signalled when the writer takes what waits
}

// NewOutbox holds up to limit notifications (DefaultOutbox when 0).
func NewOutbox(limit int) *Outbox {
	if limit <= 0 {
		limit = DefaultOutbox
	}
	return &Outbox{limit: limit, wake: make(chan struct{}, 1), taken: make(chan struct{}, 1)}
}

// Send queues a message that must not be lost (a response or request).
func (o *Outbox) Send(msg []byte) error { return o.put(msg, Relation{}, false) }

// Notify queues a notification, or drops it when the peer is behind.
func (o *Outbox) Notify(msg []byte) error { return o.put(msg, Relation{Notification: true}, true) }

// SendRelated queues msg with its Relation (see TakeRelated): a
// notification (rel.Notification) as Notify would, else as Send.
func (o *Outbox) SendRelated(msg []byte, rel Relation) error {
	return o.put(msg, rel, rel.Notification)
}

func (o *Outbox) put(msg []byte, rel Relation, note bool) error {
	o.mu.Lock()
	switch {
	case o.closed:
		o.mu.Unlock()
		return ErrClosed
	case note && o.notes >= o.limit:
		o.mu.Unlock()
		o.dropped.Add(1)
		return ErrDropped
	}
	o.queue = append(o.queue, msg)
	o.rels = append(o.rels, rel)
	o.bytes += len(msg)
	if note {
		o.notes++
	}
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return nil
}

// Dropped is how many notifications were dropped so far.
func (o *Outbox) Dropped() uint64 { return o.dropped.Load() }

// Len is how many messages wait.
func (o *Outbox) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.queue)
}

// Ready is signalled when messages may wait; TakeNow takes them. It is for
// a writer that also waits on other things (an HTTP stream's keep-alive).
func (o *Outbox) Ready() <-chan struct{} { return o.wake }

// TakeNow returns every message waiting, oldest first, without waiting.
func (o *Outbox) TakeNow() [][]byte {
	batch, _ := o.TakeRelated()
	return batch
}

// TakeRelated is TakeNow with each message's Relation.
func (o *Outbox) TakeRelated() ([][]byte, []Relation) {
	o.mu.Lock()
	batch, rels := o.queue, o.rels
	if len(batch) > 0 {
		o.queue, o.rels, o.spareQ, o.spareR = o.spareQ, o.spareR, nil, nil
	}
	o.notes, o.bytes = 0, 0
	o.mu.Unlock()
	select {
	case o.taken <- struct{}{}:
	default:
	}
	return batch, rels
}

// maxSpare is the most messages a batch given back (Recycle) may have
// had room for to be kept: a burst's large slices are let go, not kept
// for the connection's life (128 covers 32 calls in flight, at about
// 14 KB with their Relations).
const maxSpare = 128

// Recycle gives back a batch and its Relations that TakeRelated
// returned, once written and no longer read: emptied, their slices take
// the messages queued next (after the next take, when some were queued
// meanwhile), where each take would
// otherwise leave the queue to grow again from nothing (at 32 calls in
// flight, an allocation at each doubling, every batch). The messages are
// let go, not kept until the slots are used again.
func (o *Outbox) Recycle(batch [][]byte, rels []Relation) {
	if cap(batch) == 0 || cap(batch) > maxSpare || cap(rels) > maxSpare {
		return
	}
	clear(batch)
	clear(rels)
	o.mu.Lock()
	switch {
	case o.queue == nil: // nothing queued since the take: the queue at once
		o.queue, o.rels = batch[:0], rels[:0]
	case o.spareQ == nil:
		o.spareQ, o.spareR = batch[:0], rels[:0]
	}
	o.mu.Unlock()
}

// maxQueuedBytes bounds what may wait for a slow peer before whoever adds
// answers for it waits (see WaitRoom).
const maxQueuedBytes = 32 << 20

// WaitRoom waits while n or more answers and requests (not notifications),
// or maxQueuedBytes, wait for the writer, or until stop. A reader calls it
// before it takes another request or answers one itself, so that a peer
// that sends and never reads slows to the pace it reads, instead of growing
// the queue without bound.
func (o *Outbox) WaitRoom(n int, stop <-chan struct{}) {
	for o.Full(n) {
		select {
		case <-o.taken:
		case <-stop:
			return
		}
	}
}

// Full reports whether n or more answers and requests, or maxQueuedBytes,
// wait for the writer.
func (o *Outbox) Full(n int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.queue)-o.notes >= n || o.bytes >= maxQueuedBytes
}

// Closed reports whether Close was called.
func (o *Outbox) Closed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.closed
}

// Close refuses further sends; what is queued can still be taken.
func (o *Outbox) Close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}
