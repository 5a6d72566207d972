package relay

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// fakeSessions are the sessions of a face that is not there: the ones
// given, by stream name.
type fakeSessions struct{ streams map[string]*Stream }

func (f fakeSessions) Relayed() []*Stream {
	var out []*Stream
	for _, s := range f.streams {
		out = append(out, s)
	}
	return out
}
func (f fakeSessions) ByStream(name string) *Stream { return f.streams[name] }
func (f fakeSessions) Deleted(string)               {}

// fakePeer is a session whose GET stream is open here (or not), taking
// nothing.
type fakePeer struct {
	sync.Mutex
	open  bool
	ended bool // End was called
}

func (p *fakePeer) ID() string                                { return "fake" }
func (p *fakePeer) Context() context.Context                  { return context.Background() }
func (p *fakePeer) Deliver(context.Context, []byte)           {}
func (p *fakePeer) Request(context.Context, *jsonrpc.Message) {}
func (p *fakePeer) Open() bool                                { return p.open }
func (p *fakePeer) Put(seq uint64, msg []byte, note bool)     {}
func (p *fakePeer) End() {
	p.Lock()
	defer p.Unlock()
	p.ended = true
}

// endedStore is a store that answers only Ended: the streams in ended.
type endedStore struct {
	shared.Store
	ended map[string]bool
	mu    sync.Mutex
	asked int // Ended calls
}

func (s *endedStore) Ended(_ context.Context, stream string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked++
	return s.ended[stream], nil
}

// The events waiting to be appended are bounded, in count and in bytes,
// for all sessions together: beyond, an event is lost (and counted), the
// queue does not grow.
func TestRelayQueueBounded(t *testing.T) {
	r := &Relay{appendQ: make(chan struct{}, 1), pulls: map[*Stream]struct{}{}} // no appender: nothing leaves
	hs := &Stream{name: "s"}
	for i := range maxQueuedEvents {
		if !r.enqueue(hs, []byte("x"), true) {
			t.Fatalf("event %d refused", i)
		}
	}
	if r.enqueue(hs, []byte("x"), true) || r.lost.Load() != 1 || len(r.queue) != maxQueuedEvents {
		t.Fatalf("over the count: queue %d, lost %d", len(r.queue), r.lost.Load())
	}
	r = &Relay{appendQ: make(chan struct{}, 1), pulls: map[*Stream]struct{}{}}
	big := make([]byte, 1<<20)
	for range maxQueuedBytes >> 20 {
		r.enqueue(hs, big, true)
	}
	if r.enqueue(hs, []byte("x"), false) || r.queued != maxQueuedBytes {
		t.Fatalf("over the bytes: %d queued", r.queued)
	}
}

// A notice lost to a full inbox (a flood of payloads at the replica) does
// not leave a GET stream open here without its new events: the
// dispatcher, told, has every GET stream here read the store, as after a
// reconnection.
func TestRelayFullInboxRereads(t *testing.T) {
	hs := &Stream{peer: &fakePeer{open: true}, name: "s"} // its GET stream is open here
	// A relay that nothing else runs: its inbox holds one.
	ctx, stop := context.WithCancel(t.Context())
	r := &Relay{opts: Options{Sessions: fakeSessions{map[string]*Stream{hs.name: hs}}}, ctx: ctx,
		pulls: map[*Stream]struct{}{}, pullQ: make(chan struct{}, 1), inbox: make(chan string, 1)}
	r.heard("e - another-stream 1")
	r.heard("e - " + hs.name + " 2") // lost: the inbox is full
	var wg sync.WaitGroup
	wg.Go(r.dispatch)
	defer func() { stop(); wg.Wait() }()
	await.For(t, 5*time.Second, "the GET stream to be scheduled for a read", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		_, ok := r.pulls[hs]
		return ok
	})
	if r.lost.Load() != 1 {
		t.Fatalf("lost %d", r.lost.Load())
	}
}

// A DELETE's notice missed while the LISTEN reconnected does not leave
// the session live here: after a reconnection the relay asks the store
// which of its sessions were ended, and ends those, only those.
func TestRelayReconnectionEndsSessionsEndedMeanwhile(t *testing.T) {
	gone, kept := &fakePeer{}, &fakePeer{}
	streams := map[string]*Stream{"gone": {peer: gone, name: "gone"}, "kept": {peer: kept, name: "kept"}}
	ctx, stop := context.WithCancel(t.Context())
	store := &endedStore{ended: map[string]bool{"gone": true}}
	r := &Relay{opts: Options{Sessions: fakeSessions{streams}}, store: store,
		ctx: ctx, pulls: map[*Stream]struct{}{}, pullQ: make(chan struct{}, 1), endedQ: make(chan struct{}, 1),
		inbox: make(chan string, 1)}
	var wg sync.WaitGroup
	wg.Go(r.dispatch)
	wg.Go(r.checkEnded)
	defer func() { stop(); wg.Wait() }()
	r.heard("") // reconnected
	await.For(t, 30*time.Second, "the store asked about both sessions", func() bool {
		store.mu.Lock()
		defer store.mu.Unlock()
		return store.asked >= 2
	})
	stop()
	wg.Wait() // End is called before the next session is asked about
	if !gone.ended || kept.ended {
		t.Fatalf("ended: the session the store says ended %v, the other %v", gone.ended, kept.ended)
	}
}
