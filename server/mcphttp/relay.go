package mcphttp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// The relay between replicas (Options.Store with Options.SessionKeys):
// every replica serves every request of a sealed session, whichever the
// balancer picks (round robin included), and what only one replica holds
// is found through the store.
//
//   - The GET stream's events are kept in the store (shared.Relay's
//     AppendEvents), numbered per session by the store, under the
//     session's stream name (sealer.streamName: the same on every
//     replica, unguessable). The replica that holds the session's GET
//     stream delivers them, woken by the notice each append publishes;
//     a GET with Last-Event-ID at any replica replays from the store.
//     What goes down a POST's stream (an answer, the progress of that
//     call) stays on the replica of that POST, as without a store.
//   - The client's answer to a request of the hub's is published when it
//     reaches a replica that did not send that request: the hub's
//     request ids carry the sending replica's tag (jsonrpc's
//     CallIDPrefix "dm-<tag>-"), and only that replica, in that session,
//     takes it. notifications/cancelled and logging/setLevel are
//     published to every replica that holds the session.
//   - DELETE is recorded in the store (End) until the id expires: every
//     replica refuses to resume the session, and each that holds it ends
//     it when it hears.
//
// A message relayed is addressed by the session's stream name, which
// only a request bearing the session's sealed id, opened for its own
// credential, can name: a client reaches its own session only. Nothing
// kept here grows with what is relayed: the appends wait in a bounded
// queue (a message beyond it is lost, and counted), the payloads heard
// in a bounded inbox (the same), and the sessions to pull are a set of
// the sessions open here.

// errRelayDown is an answer for another replica the store did not take.
var errRelayDown = errors.New("the store shared by the replicas does not answer: the answer could not reach the replica that asked")

// relayChannel is the store's channel of the relay.
const relayChannel = "dynamic_mcp_relay"

const (
	// maxQueuedEvents and maxQueuedBytes bound the events waiting to be
	// appended to the store, for every session of the face together.
	maxQueuedEvents = 4096
	maxQueuedBytes  = 32 << 20
	// maxInbox and maxInboxBytes bound the payloads heard and not yet
	// dispatched.
	maxInbox      = 4096
	maxInboxBytes = 32 << 20
	// relayWait bounds one round trip to the store.
	relayWait = 5 * time.Second
	// pullers is how many goroutines read events from the store for the
	// GET streams open here.
	pullers = 4
	// pullRetry is how long a puller waits before it reads the store
	// again after a failed read.
	pullRetry = time.Second
)

// Kinds of payloads: "<kind> <tag> <stream> <body>".
const (
	relayEvent     = "e" // stream has new events (published by AppendEvents)
	relayAnswer    = "a" // body answers a request of replica tag's
	relayCancelled = "c" // body is notifications/cancelled, from replica tag
	relayLevel     = "l" // body is logging/setLevel, from replica tag
	relayDeleted   = "d" // the session was ended by DELETE at replica tag
)

// relay is a face's link to the other replicas.
type relay struct {
	s          *Server
	store      shared.Store
	tag        string // this replica's, random
	ctx        context.Context
	stop       context.CancelFunc
	closing    chan struct{}   // closed by close: the appender appends what is queued, and returns
	appends    context.Context // of every append: ends relayWait after close
	endAppends context.CancelFunc
	wg         sync.WaitGroup // the loops below

	mu      sync.Mutex // guards queue, queued and pulls
	queue   []queuedEvent
	queued  int                       // bytes in queue
	pulls   map[*httpSession]struct{} // sessions whose GET stream is behind the store
	appendQ chan struct{}             // wakes the appender (1)
	pullQ   chan struct{}             // wakes the pullers (1)
	inbox   chan string               // payloads heard
	inboxed atomic.Int64              // bytes in inbox

	lost atomic.Uint64 // events or payloads dropped by a full queue, or a store that failed
	// deleted are the streams of the sessions ended by DELETE at other
	// replicas, heard here: a resume that asked the store just before
	// the DELETE was recorded ends the session it made (resume.go).
	deleted endedSessions
	missed  atomic.Bool // a payload was dropped by a full inbox since dispatch last looked

	asideMu sync.Mutex           // guards asides
	asides  map[*httpSession]int // deliveries under way off the dispatcher, by session (see aside)
	asideN  int                  // their sum
}

// Bounds of the deliveries a replica makes off its dispatcher (aside):
// a session's answers and cancellations wait for its Conn to take them
// (up to relayWait), which must not hold up another session's.
const (
	maxAsidePerSession = 4
	maxAsides          = 256
)

// aside runs deliver, which waits on hs alone, on a goroutine of its
// own, so that the dispatcher goes on with other sessions' messages; at
// most maxAsidePerSession for hs and maxAsides in all. Beyond them the
// message is dropped and counted lost: a session that cannot take its
// answers as fast as they come (its client floods it) loses its own, not
// another's.
func (r *relay) aside(hs *httpSession, deliver func()) bool {
	r.asideMu.Lock()
	if r.asides[hs] >= maxAsidePerSession || r.asideN >= maxAsides {
		r.asideMu.Unlock()
		r.lost.Add(1)
		return false
	}
	if r.asides == nil {
		r.asides = map[*httpSession]int{}
	}
	r.asides[hs]++
	r.asideN++
	r.asideMu.Unlock()
	r.wg.Go(func() {
		defer func() {
			r.asideMu.Lock()
			if r.asides[hs]--; r.asides[hs] == 0 {
				delete(r.asides, hs)
			}
			r.asideN--
			r.asideMu.Unlock()
		}()
		deliver()
	})
	return true
}

type queuedEvent struct {
	hs *httpSession
	ev shared.NewEvent
}

// newRelay starts the relay of s on store: its listener, appender and
// pullers, until close.
func newRelay(s *Server, store shared.Store) *relay {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	r := &relay{s: s, store: store, tag: hex.EncodeToString(b), pulls: map[*httpSession]struct{}{},
		appendQ: make(chan struct{}, 1), pullQ: make(chan struct{}, 1), inbox: make(chan string, maxInbox), closing: make(chan struct{})}
	r.ctx, r.stop = context.WithCancel(context.Background())
	r.appends, r.endAppends = context.WithCancel(context.Background())
	r.wg.Go(func() { store.Subscribe(r.ctx, relayChannel, r.heard) })
	r.wg.Go(r.dispatch)
	r.wg.Go(r.appender)
	for range pullers {
		r.wg.Go(r.puller)
	}
	return r
}

// heard puts p, a payload heard, in the inbox; one that does not fit is
// lost, and the dispatcher told (missed), so that the GET streams here
// read the store even though a notice of their new events was lost.
func (r *relay) heard(p string) {
	if r.inboxed.Load()+int64(len(p)) <= maxInboxBytes { // the one producer: exact
		r.inboxed.Add(int64(len(p)))
		select {
		case r.inbox <- p:
			return
		default:
			r.inboxed.Add(-int64(len(p)))
		}
	}
	r.lost.Add(1)
	r.missed.Store(true)
}

// close stops the relay's goroutines and waits for them: the events
// queued are appended first, within relayWait (a replica that stops
// after draining does not lose the last events of its calls).
func (r *relay) close() {
	close(r.closing)
	t := time.AfterFunc(relayWait, r.endAppends)
	r.stop()
	r.wg.Wait()
	t.Stop()
	r.endAppends()
}

// callPrefix is the prefix of the ids of the hub's requests to the
// clients of this replica (jsonrpc.ConnOptions.CallIDPrefix): "" without
// a relay (r is nil).
func (r *relay) callPrefix() string {
	if r == nil {
		return ""
	}
	return "dm-" + r.tag + "-"
}

// allowed takes the room for body from hs's relay budget
// (relaybudget.go); false when there is none: body is not relayed (and
// counted lost).
func (r *relay) allowed(hs *httpSession, body []byte) bool {
	if hs.st.relayed.budget.take(r.s.now(), len(body), r.s.hub.Settings().MaxMessageSize) {
		return true
	}
	r.lost.Add(1)
	r.s.logger.Debug("relay: a message over its session's budget not relayed", "session", hs.id, "bytes", len(body))
	return false
}

// publish sends a payload of kind about hs's session, a message the
// client sent (body) within its budget, tagged with this replica.
func (r *relay) publish(kind string, hs *httpSession, body []byte) error {
	return r.publishTagged(kind, r.tag, hs, body)
}

// publishTagged is publish with the tag of a payload of kind: the
// sender's, or for an answer its addressee's.
func (r *relay) publishTagged(kind, tag string, hs *httpSession, body []byte) error {
	if kind != relayDeleted && !r.allowed(hs, body) {
		return errRelayBudget
	}
	ctx, cancel := context.WithTimeout(r.ctx, relayWait)
	defer cancel()
	err := r.store.Publish(ctx, relayChannel, kind+" "+tag+" "+hs.stream+" "+string(body))
	if err != nil {
		r.s.logger.Warn("relay: could not publish to the other replicas", "kind", kind, "session", hs.id, "err", err)
	}
	return err
}

// enqueue queues msg, to go down hs's GET stream, to be appended to the
// store; false when the queue is full (msg is lost).
func (r *relay) enqueue(hs *httpSession, msg []byte, note bool) bool {
	r.mu.Lock()
	if len(r.queue) >= maxQueuedEvents || r.queued+len(msg) > maxQueuedBytes {
		r.mu.Unlock()
		r.lost.Add(1)
		return false
	}
	r.queue = append(r.queue, queuedEvent{hs: hs, ev: shared.NewEvent{Stream: hs.stream, Msg: msg, Note: note, Notice: relayEvent + " - " + hs.stream}})
	r.queued += len(msg)
	r.mu.Unlock()
	wake(r.appendQ)
	return true
}

func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// appender appends the queued events to the store, in order, as many at
// once as are queued (one transaction, one round trip), and pulls at
// once for the GET streams open here.
func (r *relay) appender() {
	for {
		select {
		case <-r.closing:
			// Under r.appends, not r.ctx: the last appends outlive
			// r.ctx, for relayWait.
			r.appendQueued(r.appends)
			return
		case <-r.appendQ:
		}
		r.appendQueued(r.appends)
	}
}

// appendQueued appends what is queued, batch by batch, each within
// relayWait and parent.
func (r *relay) appendQueued(parent context.Context) {
	for {
		r.mu.Lock()
		batch := r.queue[:min(len(r.queue), shared.MaxEvents)]
		r.queue = r.queue[len(batch):]
		for _, q := range batch {
			r.queued -= len(q.ev.Msg)
		}
		if len(r.queue) == 0 {
			r.queue = nil
		}
		r.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		events := make([]shared.NewEvent, len(batch))
		for i, q := range batch {
			events[i] = q.ev
		}
		ctx, cancel := context.WithTimeout(parent, relayWait)
		seqs, err := r.store.AppendEvents(ctx, relayChannel, events)
		cancel()
		if err != nil {
			lost := 0
			for _, q := range batch {
				if !r.unkept(q.hs, q.ev.Msg, q.ev.Note) {
					lost++
				}
			}
			r.lost.Add(uint64(lost))
			r.s.logger.Warn("relay: GET stream events not kept: the store failed", "events", len(batch), "lost", lost, "err", err)
			continue
		}
		for i, q := range batch {
			r.delivered(q.hs, seqs[i], q.ev.Msg, q.ev.Note)
		}
	}
}

// schedule has hs's GET stream read the store's new events, if it is
// open here.
func (r *relay) schedule(hs *httpSession) {
	if !hs.st.standaloneOpen() {
		return
	}
	r.mu.Lock()
	r.pulls[hs] = struct{}{}
	r.mu.Unlock()
	wake(r.pullQ)
}

// delivered puts the event seq of hs's stream, msg, just appended here,
// on hs's GET stream when that is open here and has had every event
// before it: no need to read it back from the store. Else the GET
// stream, wherever it is, reads the store (woken by the notice).
func (r *relay) delivered(hs *httpSession, seq uint64, msg []byte, note bool) {
	ss := hs.st
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.standalone == nil || ss.relayed.delivered+1 != seq {
		return
	}
	ss.putRelayed(seq, msg, note)
	ss.relayed.delivered = seq
}

// unkept puts msg, which the store did not keep (it failed), on hs's GET
// stream when that is open here, so that a session whose client reaches
// this replica is served without the store. Unnumbered: it bears the id
// of the last event the stream had, so that a client that resumes with
// it gets what the store kept after that. False when there is no GET
// stream here (msg is lost).
func (r *relay) unkept(hs *httpSession, msg []byte, note bool) bool {
	ss := hs.st
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.standalone == nil {
		return false
	}
	ss.putRelayed(ss.relayed.delivered, msg, note)
	return true
}

// putRelayed puts msg, with the id of event seq, on the GET stream open
// here, counting a notification its outbox dropped as lost; ss.mu is held.
func (ss *sessionStream) putRelayed(seq uint64, msg []byte, note bool) {
	if ss.standalone.put(framed(ss.relayed.id(seq), msg), note) != nil && note {
		ss.lost.Add(1)
	}
}

// puller delivers the store's events to the GET streams scheduled.
func (r *relay) puller() {
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.pullQ:
		}
		for {
			r.mu.Lock()
			var hs *httpSession
			for x := range r.pulls {
				hs = x
				delete(r.pulls, x)
				break
			}
			more := len(r.pulls) > 0
			r.mu.Unlock()
			if hs == nil {
				break
			}
			if more {
				wake(r.pullQ) // another puller takes the next
			}
			r.pull(hs)
		}
	}
}

// pull puts the events of hs's stream that its GET stream has not had
// on it; one pull of a session at a time.
func (r *relay) pull(hs *httpSession) {
	ss := hs.st
	ss.pulling.Lock()
	defer ss.pulling.Unlock()
	for {
		ss.mu.Lock()
		from, gen, open := ss.relayed.delivered, ss.relayed.gen, ss.standalone != nil
		ss.mu.Unlock()
		if !open {
			return
		}
		ctx, cancel := context.WithTimeout(r.ctx, relayWait)
		events, _, err := r.store.Events(ctx, hs.stream, from)
		cancel()
		if err != nil {
			// Tried again while the stream is open here: no notice may
			// come to wake it for these events.
			r.s.logger.Warn("relay: could not read a GET stream's events from the store; trying again", "session", hs.id, "err", err)
			select {
			case <-r.ctx.Done():
				return
			case <-time.After(pullRetry):
			}
			continue
		}
		ss.mu.Lock()
		if ss.relayed.gen != gen {
			ss.mu.Unlock()
			continue // the stream was claimed again meanwhile, from another id
		}
		for _, e := range events {
			if e.Seq <= ss.relayed.delivered || ss.standalone == nil {
				continue
			}
			ss.putRelayed(e.Seq, e.Msg, e.Note)
			ss.relayed.delivered = e.Seq
		}
		ss.mu.Unlock()
		if len(events) < shared.MaxEvents {
			return
		}
	}
}

// dispatch acts on the payloads heard.
func (r *relay) dispatch() {
	for {
		var p string
		select {
		case <-r.ctx.Done():
			return
		case p = <-r.inbox:
			r.inboxed.Add(-int64(len(p)))
		}
		if p == "" || r.missed.Swap(false) {
			// Reconnected, or the inbox was full: notices may have been
			// missed.
			for _, hs := range r.s.sessions.relayed() {
				r.schedule(hs)
			}
		}
		if p == "" {
			continue
		}
		kind, rest, _ := strings.Cut(p, " ")
		tag, rest, _ := strings.Cut(rest, " ")
		stream, body, _ := strings.Cut(rest, " ")
		if kind == relayDeleted && tag != r.tag {
			r.deleted.add(stream, r.s.now().Add(sealedLifetime))
		}
		hs := r.s.sessions.byStream(stream)
		if hs == nil {
			continue // not a session of this replica
		}
		switch kind {
		case relayEvent:
			// body is the stream's last number: nothing to read when
			// the GET stream here has had it (appended here, say).
			last, err := strconv.ParseUint(body, 10, 64)
			hs.st.mu.Lock()
			behind := err != nil || hs.st.relayed.delivered < last
			hs.st.mu.Unlock()
			if behind {
				r.schedule(hs)
			}
		case relayAnswer:
			if tag == r.tag { // the tag of an answer is its addressee's
				r.aside(hs, func() { r.deliver(hs, body) })
			}
		case relayCancelled, relayLevel, relayDeleted:
			if tag == r.tag {
				continue // the tag is the sender's: done here already
			}
			switch kind {
			case relayCancelled:
				r.aside(hs, func() { r.deliver(hs, body) })
			case relayLevel:
				if m, err := jsonrpc.Decode([]byte(body)); err == nil {
					ctx, cancel := context.WithTimeout(hs.ctx, relayWait)
					_, _ = hs.sess.Request(ctx, m)
					cancel()
				}
			case relayDeleted:
				r.s.ended.add(hs.id, r.s.now().Add(sealedLifetime))
				r.s.sessions.drop(hs)
			}
		}
	}
}

// deliver hands body to hs's Conn, as if POSTed here.
func (r *relay) deliver(hs *httpSession, body string) {
	ctx, cancel := context.WithTimeout(r.ctx, relayWait)
	defer cancel()
	hs.st.deliver(ctx, []byte(body))
}

// relays takes msg, a notification or an answer POSTed to hs's session,
// when another replica must have it: an answer to another replica's
// request is published for it alone (true: not for here), or refused
// with errRelayBudget (true too) when over the session's budget, or
// errRelayDown when the store did not take it. A
// notifications/cancelled is taken here (false), and published for every
// replica once it has been (cancelled), so that a store slow to answer
// does not hold up the cancellation here.
func (r *relay) relays(hs *httpSession, msg *jsonrpc.Message, body []byte) (bool, error) {
	if msg.Method != "" {
		return false, nil
	}
	var id string
	if json.Unmarshal(msg.ID, &id) != nil {
		return false, nil
	}
	rest, ok := strings.CutPrefix(id, "dm-")
	tag, _, _ := strings.Cut(rest, "-")
	if !ok || tag == r.tag || len(tag) != len(r.tag) {
		return false, nil // this replica's, or none's: the Conn takes it (or drops it)
	}
	// Published with the other replica's tag, so that only it takes it.
	if err := r.publishTagged(relayAnswer, tag, hs, body); errors.Is(err, errRelayBudget) {
		return true, err
	} else if err != nil {
		return true, errRelayDown
	}
	r.s.logger.Debug("relay: an answer to another replica's request passed on", "session", hs.id, "replica", tag)
	return true, nil
}

// cancelled publishes body, a notifications/cancelled the client POSTed
// here and this replica took, for every other replica holding hs.
func (r *relay) cancelled(hs *httpSession, body []byte) {
	_ = r.publish(relayCancelled, hs, body)
}

// end records hs's session as ended on every replica (DELETE).
func (r *relay) end(hs *httpSession) {
	ctx, cancel := context.WithTimeout(r.ctx, relayWait)
	defer cancel()
	if err := r.store.End(ctx, hs.stream, r.s.now().Add(sealedLifetime)); err != nil {
		r.s.logger.Warn("relay: the end of a session could not be recorded; other replicas may resume it", "session", hs.id, "err", err)
	}
	_ = r.publish(relayDeleted, hs, nil)
}

// ended reports whether the session of stream was ended at any replica;
// a store that does not answer counts as not (the session resumes: the
// id is its own credential's all the same).
func (r *relay) ended(stream string) bool {
	ctx, cancel := context.WithTimeout(r.ctx, relayWait)
	defer cancel()
	ended, err := r.store.Ended(ctx, stream)
	if err != nil {
		r.s.logger.Warn("relay: could not ask the store whether a session was ended", "err", err)
	}
	return ended
}

// last is the last number the store gave an event of stream.
func (r *relay) last(stream string) (uint64, error) {
	ctx, cancel := context.WithTimeout(r.ctx, relayWait)
	defer cancel()
	_, last, err := r.store.Events(ctx, stream, 1<<62)
	if err != nil {
		r.s.logger.Warn("relay: could not read a GET stream's last event number", "err", err)
	}
	return last, err
}
