// Package relay is the link between the replicas of the HTTP face
// (mcphttp's Options.Store with Options.SessionKeys): every replica
// serves every request of a sealed session, whichever the balancer picks
// (round robin included), and what only one replica holds is found
// through the store.
//
//   - The GET stream's events are kept in the store (shared.Relay's
//     AppendEvents), numbered per session by the store, under the
//     session's stream name (the face's sealer.streamName: the same on
//     every replica, unguessable). The replica that holds the session's
//     GET stream delivers them, woken by the notice each append
//     publishes; a GET with Last-Event-ID at any replica replays from the
//     store. What goes down a POST's stream (an answer, the progress of
//     that call) stays on the replica of that POST, as without a store.
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
//
// The relay reaches the face's sessions through what the face gives it:
// Sessions (the sessions here, by stream name) and, for each session, a
// Peer (its Conn and its GET stream). It imports neither the face nor
// the hub.
package relay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// ErrDown is an answer for another replica the store did not take.
var ErrDown = errors.New("the store shared by the replicas does not answer: the answer could not reach the replica that asked")

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

// Sessions are the face's sessions as the relay reaches them, each by
// its Stream (Relay.Open).
type Sessions interface {
	// Relayed are the sessions here that go through the relay.
	Relayed() []*Stream
	// ByStream is the session here whose stream is named name, or nil.
	ByStream(name string) *Stream
	// Deleted is told that the session of the stream named name was
	// ended by DELETE at another replica, whether or not it is here: a
	// resume that asked the store just before the DELETE was recorded
	// ends the session it made.
	Deleted(name string)
}

// Peer is one session of the face as the relay reaches it: its Conn, and
// its GET stream when that is open here. Lock guards the GET stream and
// the Stream's count of what it has had (Open and Put are called with
// it held).
type Peer interface {
	sync.Locker
	// ID names the session in logs.
	ID() string
	// Context ends when the session does.
	Context() context.Context
	// Deliver hands body to the session's Conn, as if POSTed here.
	Deliver(ctx context.Context, body []byte)
	// Request has the hub handle m, a request of the client's relayed
	// (logging/setLevel).
	Request(ctx context.Context, m *jsonrpc.Message)
	// Open reports whether the session's GET stream is open here.
	Open() bool
	// Put puts msg, as the event seq, on the GET stream open here,
	// counting a notification its outbox dropped as lost.
	Put(seq uint64, msg []byte, note bool)
	// End ends the session here, DELETEd at another replica: remembered
	// as ended, and dropped.
	End()
}

// Options are what a Relay is given by its face.
type Options struct {
	Store    shared.Store
	Sessions Sessions
	Logger   *slog.Logger
	// Now is the clock of the ends of sessions recorded.
	Now func() time.Time
	// Lifetime is how long a session's id opens: its end is recorded in
	// the store that long.
	Lifetime time.Duration
	// MaxMessageSize is the largest message a client may send, read at
	// each message relayed (a reload may change it).
	MaxMessageSize func() int
}

// Relay is a face's link to the other replicas.
type Relay struct {
	opts       Options
	store      shared.Store
	logger     *slog.Logger
	tag        string // this replica's, random
	ctx        context.Context
	stop       context.CancelFunc
	closing    chan struct{}   // closed by close: the appender appends what is queued, and returns
	appends    context.Context // of every append: ends relayWait after close
	endAppends context.CancelFunc
	wg         sync.WaitGroup // the loops below

	mu      sync.Mutex // guards queue, queued and pulls
	queue   []queuedEvent
	queued  int                  // bytes in queue
	pulls   map[*Stream]struct{} // sessions whose GET stream is behind the store
	appendQ chan struct{}        // wakes the appender (1)
	pullQ   chan struct{}        // wakes the pullers (1)
	endedQ  chan struct{}        // wakes checkEnded (1)
	inbox   chan string          // payloads heard
	inboxed atomic.Int64         // bytes in inbox

	lost   atomic.Uint64 // events or payloads dropped by a full queue, or a store that failed
	missed atomic.Bool   // a payload was dropped by a full inbox since dispatch last looked

	asideMu sync.Mutex      // guards asides
	asides  map[*Stream]int // deliveries under way off the dispatcher, by session (see aside)
	asideN  int             // their sum
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
func (r *Relay) aside(hs *Stream, deliver func()) bool {
	r.asideMu.Lock()
	if r.asides[hs] >= maxAsidePerSession || r.asideN >= maxAsides {
		r.asideMu.Unlock()
		r.lost.Add(1)
		return false
	}
	if r.asides == nil {
		r.asides = map[*Stream]int{}
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
	hs *Stream
	ev shared.NewEvent
}

// New starts the relay on opts.Store: its listener, appender and
// pullers, until Close.
func New(opts Options) *Relay {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	r := &Relay{opts: opts, store: opts.Store, logger: opts.Logger, tag: hex.EncodeToString(b), pulls: map[*Stream]struct{}{},
		appendQ: make(chan struct{}, 1), pullQ: make(chan struct{}, 1), endedQ: make(chan struct{}, 1), inbox: make(chan string, maxInbox), closing: make(chan struct{})}
	r.ctx, r.stop = context.WithCancel(context.Background())
	r.appends, r.endAppends = context.WithCancel(context.Background())
	r.wg.Go(func() { r.store.Subscribe(r.ctx, relayChannel, r.heard) })
	r.wg.Go(r.dispatch)
	r.wg.Go(r.appender)
	r.wg.Go(r.checkEnded)
	for range pullers {
		r.wg.Go(r.puller)
	}
	return r
}

// heard puts p, a payload heard, in the inbox; one that does not fit is
// lost, and the dispatcher told (missed), so that the GET streams here
// read the store even though a notice of their new events was lost.
func (r *Relay) heard(p string) {
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

// Close stops the relay's goroutines and waits for them: the events
// queued are appended first, within relayWait (a replica that stops
// after draining does not lose the last events of its calls).
func (r *Relay) Close() {
	close(r.closing)
	t := time.AfterFunc(relayWait, r.endAppends)
	r.stop()
	r.wg.Wait()
	t.Stop()
	r.endAppends()
}

// CallPrefix is the prefix of the ids of the hub's requests to the
// clients of this replica (jsonrpc.ConnOptions.CallIDPrefix): "" without
// a relay (r is nil).
func (r *Relay) CallPrefix() string {
	if r == nil {
		return ""
	}
	return "dm-" + r.tag + "-"
}

// allowed takes the room for body from hs's relay budget
// (budget.go); false when there is none: body is not relayed (and
// counted lost).
func (r *Relay) allowed(hs *Stream, body []byte) bool {
	if hs.budget.take(r.opts.Now(), len(body), r.opts.MaxMessageSize()) {
		return true
	}
	r.lost.Add(1)
	r.logger.Debug("relay: a message over its session's budget not relayed", "session", hs.peer.ID(), "bytes", len(body))
	return false
}

// publish sends a payload of kind about hs's session, a message the
// client sent (body) within its budget, tagged with this replica.
func (r *Relay) publish(kind string, hs *Stream, body []byte) error {
	return r.publishTagged(kind, r.tag, hs, body)
}

// publishTagged is publish with the tag of a payload of kind: the
// sender's, or for an answer its addressee's.
func (r *Relay) publishTagged(kind, tag string, hs *Stream, body []byte) error {
	if kind != relayDeleted && !r.allowed(hs, body) {
		return ErrBudget
	}
	ctx, cancel := context.WithTimeout(r.ctx, relayWait)
	defer cancel()
	err := r.store.Publish(ctx, relayChannel, kind+" "+tag+" "+hs.name+" "+string(body))
	if err != nil {
		r.logger.Warn("relay: could not publish to the other replicas", "kind", kind, "session", hs.peer.ID(), "err", err)
	}
	return err
}

// enqueue queues msg, to go down hs's GET stream, to be appended to the
// store; false when the queue is full (msg is lost).
func (r *Relay) enqueue(hs *Stream, msg []byte, note bool) bool {
	r.mu.Lock()
	if len(r.queue) >= maxQueuedEvents || r.queued+len(msg) > maxQueuedBytes {
		r.mu.Unlock()
		r.lost.Add(1)
		return false
	}
	r.queue = append(r.queue, queuedEvent{hs: hs, ev: shared.NewEvent{Stream: hs.name, Msg: msg, Note: note, Notice: relayEvent + " - " + hs.name}})
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
func (r *Relay) appender() {
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
func (r *Relay) appendQueued(parent context.Context) {
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
			r.logger.Warn("relay: GET stream events not kept: the store failed", "events", len(batch), "lost", lost, "err", err)
			continue
		}
		for i, q := range batch {
			r.delivered(q.hs, seqs[i], q.ev.Msg, q.ev.Note)
		}
	}
}

// schedule has hs's GET stream read the store's new events, if it is
// open here.
func (r *Relay) schedule(hs *Stream) {
	if !hs.open() {
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
func (r *Relay) delivered(hs *Stream, seq uint64, msg []byte, note bool) {
	hs.peer.Lock()
	defer hs.peer.Unlock()
	if !hs.peer.Open() || hs.delivered+1 != seq {
		return
	}
	hs.peer.Put(seq, msg, note)
	hs.delivered = seq
}

// unkept puts msg, which the store did not keep (it failed), on hs's GET
// stream when that is open here, so that a session whose client reaches
// this replica is served without the store. Unnumbered: it bears the id
// of the last event the stream had, so that a client that resumes with
// it gets what the store kept after that. False when there is no GET
// stream here (msg is lost).
func (r *Relay) unkept(hs *Stream, msg []byte, note bool) bool {
	hs.peer.Lock()
	defer hs.peer.Unlock()
	if !hs.peer.Open() {
		return false
	}
	hs.peer.Put(hs.delivered, msg, note)
	return true
}

// puller delivers the store's events to the GET streams scheduled.
func (r *Relay) puller() {
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.pullQ:
		}
		for {
			r.mu.Lock()
			var hs *Stream
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
func (r *Relay) pull(hs *Stream) {
	hs.pulling.Lock()
	defer hs.pulling.Unlock()
	for {
		hs.peer.Lock()
		from, gen, open := hs.delivered, hs.gen, hs.peer.Open()
		hs.peer.Unlock()
		if !open {
			return
		}
		ctx, cancel := context.WithTimeout(r.ctx, relayWait)
		events, _, err := r.store.Events(ctx, hs.name, from)
		cancel()
		if err != nil {
			// Tried again while the stream is open here: no notice may
			// come to wake it for these events.
			r.logger.Warn("relay: could not read a GET stream's events from the store; trying again", "session", hs.peer.ID(), "err", err)
			select {
			case <-r.ctx.Done():
				return
			case <-time.After(pullRetry):
			}
			continue
		}
		hs.peer.Lock()
		if hs.gen != gen {
			hs.peer.Unlock()
			continue // the stream was claimed again meanwhile, from another id
		}
		for _, e := range events {
			if e.Seq <= hs.delivered || !hs.peer.Open() {
				continue
			}
			hs.peer.Put(e.Seq, e.Msg, e.Note)
			hs.delivered = e.Seq
		}
		hs.peer.Unlock()
		if len(events) < shared.MaxEvents {
			return
		}
	}
}

// dispatch acts on the payloads heard.
func (r *Relay) dispatch() {
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
			for _, hs := range r.opts.Sessions.Relayed() {
				r.schedule(hs)
			}
			wake(r.endedQ) // a DELETE's notice among them
		}
		if p == "" {
			continue
		}
		kind, rest, _ := strings.Cut(p, " ")
		tag, rest, _ := strings.Cut(rest, " ")
		stream, body, _ := strings.Cut(rest, " ")
		if kind == relayDeleted && tag != r.tag {
			r.opts.Sessions.Deleted(stream)
		}
		hs := r.opts.Sessions.ByStream(stream)
		if hs == nil {
			continue // not a session of this replica
		}
		switch kind {
		case relayEvent:
			// body is the stream's last number: nothing to read when
			// the GET stream here has had it (appended here, say).
			last, err := strconv.ParseUint(body, 10, 64)
			hs.peer.Lock()
			behind := err != nil || hs.delivered < last
			hs.peer.Unlock()
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
					ctx, cancel := context.WithTimeout(hs.peer.Context(), relayWait)
					hs.peer.Request(ctx, m)
					cancel()
				}
			case relayDeleted:
				hs.peer.End()
			}
		}
	}
}

// checkEnded ends the sessions here that the store says were ended, each
// time the dispatcher may have missed notices (the LISTEN reconnected, or
// the inbox was full): a session DELETEd at another replica meanwhile
// would otherwise live on here until it idled out. One store read a
// session, off the dispatcher; a store that fails ends the round (the
// next reconnection tries again).
func (r *Relay) checkEnded() {
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.endedQ:
		}
		for _, hs := range r.opts.Sessions.Relayed() {
			ctx, cancel := context.WithTimeout(r.ctx, relayWait)
			ended, err := r.store.Ended(ctx, hs.name)
			cancel()
			if err != nil {
				if r.ctx.Err() == nil {
					r.logger.Warn("relay: could not ask the store which sessions were ended while notices were missed", "err", err)
				}
				break
			}
			if ended {
				hs.peer.End()
			}
		}
	}
}

// deliver hands body to hs's Conn, as if POSTed here.
func (r *Relay) deliver(hs *Stream, body string) {
	ctx, cancel := context.WithTimeout(r.ctx, relayWait)
	defer cancel()
	hs.peer.Deliver(ctx, []byte(body))
}

// Relays takes msg, a notification or an answer POSTed to hs's session,
// when another replica must have it: an answer to another replica's
// request is published for it alone (true: not for here), or refused
// with ErrBudget (true too) when over the session's budget, or
// ErrDown when the store did not take it. A
// notifications/cancelled is taken here (false), and published for every
// replica once it has been (Cancelled), so that a store slow to answer
// does not hold up the cancellation here.
func (r *Relay) Relays(hs *Stream, msg *jsonrpc.Message, body []byte) (bool, error) {
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
	if err := r.publishTagged(relayAnswer, tag, hs, body); errors.Is(err, ErrBudget) {
		return true, err
	} else if err != nil {
		return true, ErrDown
	}
	r.logger.Debug("relay: an answer to another replica's request passed on", "session", hs.peer.ID(), "replica", tag)
	return true, nil
}

// Cancelled publishes body, a notifications/cancelled the client POSTed
// here and this replica took, for every other replica holding hs.
func (r *Relay) Cancelled(hs *Stream, body []byte) {
	_ = r.publish(relayCancelled, hs, body)
}

// Level publishes body, a logging/setLevel the client POSTed here, for
// every other replica holding hs: each logs at it.
func (r *Relay) Level(hs *Stream, body []byte) {
	_ = r.publish(relayLevel, hs, body)
}

// End records hs's session as ended on every replica (DELETE).
func (r *Relay) End(hs *Stream) {
	ctx, cancel := context.WithTimeout(r.ctx, relayWait)
	defer cancel()
	if err := r.store.End(ctx, hs.name, r.opts.Now().Add(r.opts.Lifetime)); err != nil {
		r.logger.Warn("relay: the end of a session could not be recorded; other replicas may resume it", "session", hs.peer.ID(), "err", err)
	}
	_ = r.publish(relayDeleted, hs, nil)
}

// Ended reports whether the session of stream was ended at any replica;
// a store that does not answer counts as not (the session resumes: the
// id is its own credential's all the same).
func (r *Relay) Ended(stream string) bool {
	ctx, cancel := context.WithTimeout(r.ctx, relayWait)
	defer cancel()
	ended, err := r.store.Ended(ctx, stream)
	if err != nil {
		r.logger.Warn("relay: could not ask the store whether a session was ended", "err", err)
	}
	return ended
}

// last is the last number the store gave an event of stream.
func (r *Relay) last(stream string) (uint64, error) {
	ctx, cancel := context.WithTimeout(r.ctx, relayWait)
	defer cancel()
	_, last, err := r.store.Events(ctx, stream, 1<<62)
	if err != nil {
		r.logger.Warn("relay: could not read a GET stream's last event number", "err", err)
	}
	return last, err
}
