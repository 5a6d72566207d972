package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
)

// Calls correlates the requests a side sends with the answers it gets:
// each waits for its own id's answer, ctx, or the end of the connection,
// and a late or unknown answer is dropped, never handed to another call.
type Calls struct {
	next   atomic.Int64
	prefix string // ConnOptions.CallIDPrefix: ids are the strings prefix+n; "": the numbers n

	mu      sync.Mutex // guards pending, abandoned, err, sweep and swept
	pending map[int64]pendingCall
	// abandoned are the last calls that stopped waiting before their
	// answer came (a ring of maxAbandoned): a late answer to one of them
	// is expected, not a peer's mistake (see Abandoned).
	abandoned [maxAbandoned]int64
	nextGone  int
	err       error // set once the connection is over

	// chans keeps the answer channels of calls answered (see Wait):
	// making one was an allocation every call made. A call that stopped
	// waiting (Forget, abandon) does not give its channel back: an answer
	// may still be sent on it. One pool a table, not one for all: a
	// channel belongs to the synctest bubble it was made in.
	chans sync.Pool

	// sweep ends the calls whose deadline passed (see StartRequestBy):
	// one timer a table, set for the earliest deadline of a call in
	// flight or earlier (swept; zero: not set), in place of a timer and a
	// context each call made. It is set again only for a call due before
	// it; when it fires it ends the calls due and is set for the next.
	sweep *time.Timer
	swept time.Time
}

// pendingCall is a call waiting for its answer: the channel the answer
// arrives on and its deadline (zero: none).
type pendingCall struct {
	ch       chan *Message
	deadline time.Time
}

// timedOut is what a call whose deadline passed receives (see sweepDue).
var timedOut = &Message{failed: context.DeadlineExceeded}

// maxAbandoned bounds the record of calls given up on: a late answer
// comes soon after its call's deadline, or not at all.
const maxAbandoned = 32

// ErrLateAnswer says the peer answered a call that had stopped waiting
// (its deadline passed, or it was cancelled): the peer is slow, not wrong.
var ErrLateAnswer = errors.New("the peer answered a request given up on")

// NewCalls is an empty correlation table.
func NewCalls() *Calls { return &Calls{pending: map[int64]pendingCall{}} }

// NewCallsPrefixed is an empty correlation table whose ids are JSON
// strings, prefix followed by the call's number (see
// ConnOptions.CallIDPrefix); "" is NewCalls.
func NewCallsPrefixed(prefix string) *Calls {
	c := NewCalls()
	c.prefix = prefix
	return c
}

// StartRequest registers a new call and frames its request: the id, and
// the channel its answer arrives on (nil message: the connection ended).
// params are left out when nil or null, never sent as "params": null
// (which MCP's schemas refuse). The id is a slice of the request, not an
// allocation of its own every call made.
func (c *Calls) StartRequest(method string, params json.RawMessage) (id json.RawMessage, msg []byte, _ chan *Message, _ error) {
	return c.StartRequestBy(method, params, time.Time{})
}

// StartRequestBy is StartRequest for a call that ends at deadline (zero:
// none) unless answered before: Wait then returns
// context.DeadlineExceeded, as for a context with that deadline, and the
// call is given up on (see Abandoned).
func (c *Calls) StartRequestBy(method string, params json.RawMessage, deadline time.Time) (id json.RawMessage, msg []byte, _ chan *Message, _ error) {
	n, ch, err := c.start(deadline)
	if err != nil {
		return nil, nil, nil, err
	}
	b := make([]byte, 0, len(c.prefix)+len(method)+len(params)+68)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	from := len(b)
	b = c.appendID(b, n)
	id = b[from:len(b):len(b)]
	return id, appendCall(b, method, params), ch, nil
}

// appendID appends the id of call n.
func (c *Calls) appendID(b []byte, n int64) []byte {
	if c.prefix != "" {
		return append(strconv.AppendInt(append(append(b, '"'), c.prefix...), n, 10), '"')
	}
	return strconv.AppendInt(b, n, 10)
}

// start registers call n, the channel its answer arrives on and its
// deadline.
func (c *Calls) start(deadline time.Time) (int64, chan *Message, error) {
	n := c.next.Add(1)
	ch, _ := c.chans.Get().(chan *Message)
	if ch == nil {
		ch = make(chan *Message, 1)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, nil, c.err
	}
	c.pending[n] = pendingCall{ch: ch, deadline: deadline}
	if !deadline.IsZero() && (c.swept.IsZero() || deadline.Before(c.swept)) {
		c.armLocked(deadline)
	}
	return n, ch, nil
}

// Pending is how many calls wait for their answer.
func (c *Calls) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// armLocked sets the sweep for deadline.
func (c *Calls) armLocked(deadline time.Time) {
	c.swept = deadline
	d := time.Until(deadline)
	if c.sweep == nil {
		c.sweep = time.AfterFunc(d, c.sweepDue)
		return
	}
	c.sweep.Reset(d)
}

// sweepDue ends every call whose deadline has passed, each given up on
// (see Abandoned) and woken with timedOut, and sets the sweep for the
// earliest deadline left.
func (c *Calls) sweepDue() {
	now := time.Now()
	var due []chan *Message
	c.mu.Lock()
	var next time.Time
	for n, p := range c.pending {
		switch {
		case p.deadline.IsZero():
		case !now.Before(p.deadline):
			delete(c.pending, n)
			c.abandoned[c.nextGone] = n
			c.nextGone = (c.nextGone + 1) % maxAbandoned
			due = append(due, p.ch)
		case next.IsZero() || p.deadline.Before(next):
			next = p.deadline
		}
	}
	c.swept = time.Time{}
	if !next.IsZero() {
		c.armLocked(next)
	}
	c.mu.Unlock()
	for _, ch := range due {
		ch <- timedOut
	}
}

// Forget drops a call that stopped waiting.
func (c *Calls) Forget(id json.RawMessage) {
	n, ok := c.number(id)
	if !ok {
		return
	}
	c.mu.Lock()
	delete(c.pending, n)
	c.mu.Unlock()
}

// number is the number of an id as StartRequest writes it, false for any other.
func (c *Calls) number(id json.RawMessage) (int64, bool) {
	if c.prefix == "" {
		return callNumber(id)
	}
	n := len(c.prefix)
	if len(id) < n+3 || id[0] != '"' || id[len(id)-1] != '"' || string(id[1:1+n]) != c.prefix {
		return 0, false
	}
	return callNumber(id[1+n : len(id)-1])
}

// callNumber is the number of an id as StartRequest writes it (decimal digits,
// no sign, no leading zero); false for any other id, which is none of
// ours.
func callNumber(id json.RawMessage) (int64, bool) {
	if len(id) == 0 || id[0] == '0' || id[0] == '-' {
		return 0, false
	}
	return PlainInt(id)
}

// Resolve hands m to the call waiting for its id and reports whether one
// was.
func (c *Calls) Resolve(m *Message) bool {
	n, ok := c.number(m.ID)
	if !ok {
		return false
	}
	c.mu.Lock()
	p, ok := c.pending[n]
	delete(c.pending, n)
	c.mu.Unlock()
	if ok {
		p.ch <- m
	}
	return ok
}

// Fail ends the call with id with err (the peer's answer could not be
// taken, say), and reports whether a call was waiting.
func (c *Calls) Fail(id json.RawMessage, err error) bool {
	return c.Resolve(&Message{ID: id, failed: err})
}

// Close fails every waiting call and every later one with err.
func (c *Calls) Close(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	pending := c.pending
	c.pending = map[int64]pendingCall{}
	if c.sweep != nil {
		c.sweep.Stop()
		c.swept = time.Time{}
	}
	c.mu.Unlock()
	for _, p := range pending {
		p.ch <- nil
	}
}

// Err is why the calls were closed; nil while open.
func (c *Calls) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Wait waits for the answer on ch. A peer's error comes back as *Error;
// when ctx ends first the call is forgotten and ctx's error returned; when
// the call's deadline (StartRequestBy) passes first,
// context.DeadlineExceeded. An answer that had come by the time ctx ended
// stands: which of the two Wait saw first is the scheduler's pick, and a
// caller that gives a call up once another is answered (a handshake's
// server/discover, given up once initialize is) gets the peer's answer
// whenever the peer sent it first.
func (c *Calls) Wait(ctx context.Context, id json.RawMessage, ch chan *Message) (json.RawMessage, error) {
	select {
	case m := <-ch:
		return c.took(ch, m)
	case <-ctx.Done():
		select {
		case m := <-ch:
			if m != nil && m.failed == nil {
				return c.took(ch, m)
			}
			c.chans.Put(ch) // its one send taken
		default:
			c.abandon(id)
		}
		return nil, ctx.Err()
	}
}

// took is what Wait returns for m, the one send on ch.
func (c *Calls) took(ch chan *Message, m *Message) (json.RawMessage, error) {
	// ch had its one send (whoever sends takes it out of pending
	// first, under mu) and is empty again: the next call can have it.
	c.chans.Put(ch)
	switch {
	case m == nil:
		return nil, c.Err()
	case m.failed != nil:
		return nil, m.failed
	case m.Error != nil:
		return nil, m.Error
	}
	return m.Result, nil
}

// abandon forgets a call that stopped waiting for its answer, and records
// it as given up on.
func (c *Calls) abandon(id json.RawMessage) {
	n, ok := c.number(id)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, pending := c.pending[n]; !pending {
		return // answered meanwhile
	}
	delete(c.pending, n)
	c.abandoned[c.nextGone] = n
	c.nextGone = (c.nextGone + 1) % maxAbandoned
}

// Abandoned reports whether id is that of one of the last calls that
// stopped waiting before their answer came, and takes it off the record:
// a call is answered once.
func (c *Calls) Abandoned(id json.RawMessage) bool {
	n, ok := c.number(id)
	if !ok {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if i := slices.Index(c.abandoned[:], n); i >= 0 {
		c.abandoned[i] = 0
		return true
	}
	return false
}

// Inflight tracks the requests a side is answering: at most max at once,
// each cancellable by the peer's notifications/cancelled, which also
// means it gets no answer.
type Inflight struct {
	max  int
	done chan struct{} // signalled when a request ends

	mu        sync.Mutex // guards reqs, answering and stopped
	reqs      map[string]*inflightReq
	answering int // requests whose id is free again, their answer still being sent
	stopped   bool
}

// inflightReq is a request being answered, from begin to end, and the
// ctx of its handler: its own cancellation's, which gives the request's
// id (RelatedID) when it is a Router's (routes). One value for both: a
// ctx.WithValue above it would be two allocations a request more.
type inflightReq struct {
	context.Context // WithCancel's, below it
	id              json.RawMessage
	routes          bool
	key             string // its id
	cancel          context.CancelFunc
	canceled        atomic.Bool // by the peer
}

// Value gives the request itself for requestKey when the Conn is a
// Router's (RelatedID reads its id), and its ctx's values otherwise.
func (r *inflightReq) Value(key any) any {
	if r.routes && key == (requestKey{}) {
		return r
	}
	return r.Context.Value(key)
}

// NewInflight allows max requests at once.
func NewInflight(max int) *Inflight {
	return &Inflight{max: max, reqs: map[string]*inflightReq{}, done: make(chan struct{}, 1)}
}

// begin starts answering the request with id: it returns the request's
// place, which is its handler's ctx and which end ends; routes says the
// ctx gives the id (a Router's Conn). A request over the limit, or with
// the id of one still in flight, is refused with the error to answer.
func (f *Inflight) begin(id json.RawMessage, routes bool) (*inflightReq, *Error) {
	key := string(id)
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		return nil, Errorf(CodeInternalError, "the server is shutting down")
	}
	if _, dup := f.reqs[key]; dup {
		f.mu.Unlock()
		return nil, Errorf(CodeInvalidRequest, "Invalid Request: id "+clip.Echo(key)+" is already in use by a request in flight")
	}
	if len(f.reqs)+f.answering >= f.max {
		f.mu.Unlock()
		return nil, Errorf(CodeServerBusy, fmt.Sprintf("too many requests in flight (%d): try again when some are answered", f.max))
	}
	// Not a child of a context of the Conn's: Close and fail cancel
	// every request in flight themselves (CancelAll), and a request
	// spares that parent's lock, a contended one at many in flight.
	rctx, cancel := context.WithCancel(context.Background())
	r := &inflightReq{Context: rctx, id: id, routes: routes, key: key, cancel: cancel}
	f.reqs[key] = r
	f.mu.Unlock()
	return r, nil
}

// ending begins to end the request r begin started, before its answer
// is sent: it reports whether the answer is still wanted (the peer did
// not cancel). ended, once the answer is sent or not, ends it: the
// request counts as in flight until then, so that Wait covers its answer.
// (Methods, not a func begin returns nor one of the answer's given them:
// an allocation a request less each.)
func (f *Inflight) ending(r *inflightReq) (wanted bool) {
	wanted = !r.canceled.Load()
	// The id is free before its answer goes out: a peer that reuses an
	// id the moment it has the answer must not find it still in use.
	f.mu.Lock()
	delete(f.reqs, r.key)
	f.answering++
	f.mu.Unlock()
	return wanted
}

// ended ends the request ending began to end.
func (f *Inflight) ended(r *inflightReq) {
	f.mu.Lock()
	f.answering--
	f.mu.Unlock()
	r.cancel()
	select {
	case f.done <- struct{}{}:
	default:
	}
}

// Cancel cancels the request a notifications/cancelled names.
func (f *Inflight) Cancel(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	f.mu.Lock()
	r := f.reqs[string(p.RequestID)]
	f.mu.Unlock()
	if r != nil {
		r.canceled.Store(true)
		r.cancel()
	}
}

// Stop refuses every request from now on; those in flight go on.
func (f *Inflight) Stop() {
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
}

// CancelAll cancels every request in flight (the peer is gone).
func (f *Inflight) CancelAll() {
	f.mu.Lock()
	for _, r := range f.reqs {
		r.cancel()
	}
	f.mu.Unlock()
}

// Len is how many requests are in flight.
func (f *Inflight) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs) + f.answering
}

// Wait waits until no request is in flight or ctx ends.
func (f *Inflight) Wait(ctx context.Context) {
	for f.Len() > 0 {
		select {
		case <-f.done:
		case <-ctx.Done():
			return
		}
	}
}
