// Package upstreamtest is what the tests' fake Streamable HTTP upstreams
// share (server's and server/mcphttp's per-user tests).
package upstreamtest

import (
	"fmt"
	"net/http"
	"sync"
)

// Streams are a fake upstream's GET streams, one a connection, each known
// by a key of its requests (say their Authorization: one connection a
// user), on which a test writes what the server sends on its own, with no
// call in flight. The zero value is ready.
type Streams struct {
	// Opened, if not nil, is called as each GET stream opens, once its
	// messages can be sent (Of), before its first event: r is the GET.
	Opened func(r *http.Request, key string)

	mu sync.Mutex
	m  map[string]chan string
}

// Serve answers the GET r as key's event stream: it writes each message
// sent on Of(key) as one event, until r ends. A later GET with the same
// key takes the key's messages from then on.
func (s *Streams) Serve(w http.ResponseWriter, r *http.Request, key string) {
	out := make(chan string, 16)
	s.mu.Lock()
	if s.m == nil {
		s.m = map[string]chan string{}
	}
	s.m[key] = out
	s.mu.Unlock()
	if s.Opened != nil {
		s.Opened(r, key)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	for {
		select {
		case msg := <-out:
			fmt.Fprintf(w, "data: %s\n\n", msg)
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			return
		}
	}
}

// Of is the stream of key's latest GET, to send messages on; nil until
// a GET with key came.
func (s *Streams) Of(key string) chan<- string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if out, ok := s.m[key]; ok {
		return out
	}
	return nil
}
