package inspect

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/internal/sse"
)

// The events a page is sent, as SSE event names.
const (
	evRow     = "row"   // a new row, or one of the history
	evEnd     = "end"   // a request's outcome and routing
	evHop     = "hop"   // a hop added to a row
	evMessage = "msg"   // a message added to a row
	evClear   = "clear" // the history was emptied
	evLost    = "lost"  // the page fell behind and events were dropped
)

// event is one change for the pages watching. What it points to is never
// changed once published, so the streams encode it without the lock.
type event struct {
	kind string
	seq  uint64 // the row, for hop and msg
	row  *row
	hop  *hop
	msg  *message
}

// size is about the bytes e holds: what it keeps alive while it waits for
// a page, even once the history has let go of it.
func (e event) size() int64 {
	n := 64
	switch {
	case e.row != nil:
		n += e.row.bytes
	case e.hop != nil:
		n += e.hop.Params.size() + e.hop.Result.size() + e.hop.Error.size()
	case e.msg != nil:
		n += len(e.msg.Method) + e.msg.Params.size() + e.msg.Result.size() + e.msg.Error.size()
	}
	return int64(n)
}

// subscriberBuffer is how many events may wait for one page. A page
// further behind loses what does not fit, is told how much, and catches
// up by reloading the history; the hub never waits for it.
const subscriberBuffer = 1024

// maxSubscribers bounds the pages watching at once, each with its buffer.
const maxSubscribers = 16

// maxQueued bounds the bytes of the events waiting for one page, which
// may be rows the history no longer holds: with maxSubscribers, what
// pages that read slowly can keep alive besides the history.
const maxQueued = 8 << 20

// keepAlive is how often an idle stream gets a comment, so that proxies
// and the browser keep it open.
const keepAlive = 15 * time.Second

// writeTimeout bounds one write to a page or an export: one that stops
// reading loses its stream (Inspector.writeTimeout, which tests shorten).
const writeTimeout = 10 * time.Second

type subscriber struct {
	ch     chan event
	lost   atomic.Uint64 // events that did not fit, since last told
	queued atomic.Int64  // the size of the events in ch
}

// take is e, taken from s.ch: its bytes no longer wait.
func (s *subscriber) take(e event) event {
	s.queued.Add(-e.size())
	return e
}

// publish gives e to every page watching, dropping it for a page with no
// room. The caller holds i.mu, so that every page sees the events in the
// order the hub made them.
func (i *Inspector) publish(e event) {
	n := e.size()
	for s := range i.subs {
		if s.queued.Load()+n > maxQueued {
			s.lost.Add(1)
			continue
		}
		select {
		case s.ch <- e:
			s.queued.Add(n)
		default:
			s.lost.Add(1)
		}
	}
}

// errBusy refuses a page when maxSubscribers are watching.
var errBusy = errors.New("too many pages are watching")

// subscribe registers a page and returns the history it starts from;
// every change after it goes to the page's channel.
func (i *Inspector) subscribe() (*subscriber, []*row, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.closed {
		return nil, nil, http.ErrServerClosed
	}
	if len(i.subs) >= maxSubscribers {
		return nil, nil, errBusy
	}
	s := &subscriber{ch: make(chan event, subscriberBuffer)}
	i.subs[s] = struct{}{}
	return s, i.history.snapshots(), nil
}

func (i *Inspector) unsubscribe(s *subscriber) {
	i.mu.Lock()
	delete(i.subs, s)
	i.mu.Unlock()
}

// serveEvents streams the history, then every change, as server-sent
// events, until the page goes, stops reading, or the inspector closes.
func (i *Inspector) serveEvents(w http.ResponseWriter, r *http.Request) {
	s, history, err := i.subscribe()
	if err != nil {
		http.Error(w, "Service Unavailable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer i.unsubscribe(s)
	i.logger.Debug("an inspector page is watching", "addr", r.RemoteAddr)
	defer i.logger.Debug("an inspector page stopped watching", "addr", r.RemoteAddr)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	out := &sseWriter{sse.NewWriter(w, i.writeTimeout)}
	out.event("hello", map[string]int{"requests": i.opts.Requests}) // how many rows the page keeps
	for _, row := range history {
		out.event(evRow, row)
		if out.full() && out.flush() != nil {
			return
		}
	}
	out.event("live", struct{}{})
	if out.flush() != nil {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case e := <-s.ch:
			out.send(s.take(e))
			// Send what else is waiting before flushing: one write for a burst.
			for more := true; more; {
				select {
				case e := <-s.ch:
					out.send(s.take(e))
					more = !out.full()
				default:
					more = false
				}
			}
			if n := s.lost.Swap(0); n > 0 {
				i.logger.Debug("an inspector page fell behind and lost events", "addr", r.RemoteAddr, "lost", n)
				out.event(evLost, map[string]uint64{"lost": n})
			}
		case <-tick.C:
			if n := s.lost.Swap(0); n > 0 {
				out.event(evLost, map[string]uint64{"lost": n})
			}
			out.Comment("keep-alive")
		case <-r.Context().Done():
			return
		case <-i.done:
			return
		}
		if out.flush() != nil {
			return
		}
	}
}

// sseWriter is a page's event stream (sse.Writer): it buffers events,
// their data JSON, and writes them with a deadline.
type sseWriter struct{ *sse.Writer }

func (o *sseWriter) send(e event) {
	switch e.kind {
	case evRow, evEnd:
		o.event(e.kind, e.row)
	case evHop:
		o.event(e.kind, struct {
			Seq uint64 `json:"seq"`
			Hop *hop   `json:"hop"`
		}{e.seq, e.hop})
	case evMessage:
		o.event(e.kind, struct {
			Seq     uint64   `json:"seq"`
			Message *message `json:"message"`
		}{e.seq, e.msg})
	case evClear:
		o.event(e.kind, struct{}{})
	}
}

// event appends one event; its data is v as one line of JSON (encoding/json
// escapes every newline, so it is always one).
func (o *sseWriter) event(name string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = fmt.Appendf(nil, `{"error":%q}`, err.Error())
	}
	o.Event("", name, b)
}

// flushAt is how much is written at once, at most about.
const flushAt = 256 << 10

func (o *sseWriter) full() bool { return o.Len() >= flushAt }

func (o *sseWriter) flush() error {
	if o.Len() == 0 {
		return nil
	}
	return o.Flush()
}
