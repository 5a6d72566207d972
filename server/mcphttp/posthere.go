package mcphttp

import (
	"context"
	"net/http"
	"sync"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// A request POSTed in a session is answered on the goroutine net/http
// read it on (jsonrpc.Conn.Serve), as a request without a session is
// (sessionless.go), not handed to the session's Conn to read and back:
// that cost two wake-ups a request, and the Conn's one reader made a
// session's requests wait on each other, so that at 32 in flight the hub
// was hardly faster than TBXark/mcp-proxy (issue 33). The Conn still
// admits it, against the same caps, and cancels it; its answer is routed
// by the session's stream as before. Only what goes down the POST's
// response while the request runs (progress, a log message, a request of
// the hub's) starts a goroutine: the one that writes those events
// (postPump), gone before the answer is written.

// serveHere answers msg, registered as p, on this goroutine, writing what
// goes down p's stream meanwhile as events (with header(), the headers
// of the event stream). It returns the event stream once started,
// whether the Conn took msg (false: the session has ended), and whether
// a write failed (the client stopped reading). The answer is p's.
// release gives back the body's bytes once the Conn has the message.
func serveHere(w http.ResponseWriter, r *http.Request, hs *httpSession, msg *jsonrpc.Message, p *post, header func() http.Header, release func()) (sw *sseWriter, delivered, broken bool) {
	var pump *postPump
	if p.out != nil {
		pump = &postPump{out: p.out.out, w: w, header: header, stop: make(chan struct{})}
		wake := pump.wake
		p.out.woken.Store(&wake)
		if p.out.out.Len() > 0 { // a request of the hub's came before the hook
			pump.wake()
		}
	}
	// A client that drops its POST: what relates to the request goes to
	// the GET stream from then on, as when the Conn answered it. Its
	// caller reads p.out once this returns: it waits for a forget begun.
	forgot := make(chan struct{})
	stop := context.AfterFunc(r.Context(), func() { hs.st.forget(msg.ID, p, true); close(forgot) })
	defer func() {
		if !stop() {
			<-forgot
		}
	}()
	release() // the Conn counts the message's bytes from here on
	delivered = hs.conn.Serve(msg)
	if pump == nil {
		return nil, delivered, false
	}
	pump.halt()
	return pump.sw, delivered, pump.broken
}

// postPump writes, as events, what is queued for the POST of a request
// answered on the goroutine that read it, while it runs.
type postPump struct {
	out    *jsonrpc.Outbox
	w      http.ResponseWriter
	header func() http.Header

	mu      sync.Mutex // guards running and done
	running bool       // run was started
	done    bool       // the answer is due: no run starts
	stop    chan struct{}
	wg      sync.WaitGroup
	sw      *sseWriter // the event stream, once started; run's while it runs
	broken  bool       // a write failed: the client stopped reading
}

// wake starts the writer, once.
func (pp *postPump) wake() {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if !pp.running && !pp.done {
		pp.running = true
		pp.wg.Add(1)
		go pp.run()
	}
}

func (pp *postPump) run() {
	defer pp.wg.Done()
	for {
		select {
		case <-pp.out.Ready():
			batch := pp.out.TakeNow()
			if len(batch) == 0 {
				continue
			}
			if pp.sw == nil {
				pp.sw = newSSEWriter(pp.w)
				if pp.sw.start(pp.header()) != nil {
					pp.broken = true
					return
				}
			}
			if pp.sw.events("message", batch, false) != nil {
				pp.broken = true
				return
			}
		case <-pp.stop:
			return
		}
	}
}

// halt stops the writer and waits for it: what is still queued goes
// before the answer, written by the request's goroutine.
func (pp *postPump) halt() {
	pp.mu.Lock()
	pp.done = true
	pp.mu.Unlock()
	close(pp.stop)
	pp.wg.Wait()
}
