package mcphttp

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/dynamic-mcp/dynamic-mcp/server/httpguard"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// The limits of the HTTP face, each so that the hub's memory stays bounded
// whatever clients do: sessions (maxSessions, least recently used idle one
// closed first), the time to read a body (bodyTimeout), requests in flight
// in all (maxInflight, besides each session's own cap), the bytes of
// bodies being read and decoded (bodies), and failed token attempts per
// client address (auth).

// errTooManySessions refuses a new session when the cap is reached and
// every session is busy.
var errTooManySessions = errors.New("too many sessions")

// errClosed refuses a new session once the face is closing.
var errClosed = errors.New("the HTTP face is closed")

// withDefaults fills the limits left at zero.
func (o Options) withDefaults() Options {
	if o.MaxSessions <= 0 {
		o.MaxSessions = config.DefaultMaxSessions
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = config.DefaultBodyTimeout
	}
	if o.MaxInflight <= 0 {
		o.MaxInflight = config.DefaultMaxInflight
	}
	if o.MaxBodyMemory <= 0 {
		o.MaxBodyMemory = config.DefaultMaxBodyMemory
	}
	if o.MaxAuthFailures <= 0 {
		o.MaxAuthFailures = config.DefaultMaxAuthFailures
	}
	if o.writeTimeout <= 0 {
		o.writeTimeout = writeTimeout
	}
	return o
}

// unavailable answers 503 with Retry-After: a limit of the hub's, not the
// client's fault, that passes.
func unavailable(w http.ResponseWriter, why string) {
	w.Header().Set("Retry-After", "1")
	http.Error(w, "Service Unavailable: "+why, http.StatusServiceUnavailable)
}

// byteBudget bounds the bytes of request bodies being read at once. A
// reader reserves what it may hold before reading and gives it back once
// the session's Conn has taken the message: a call that runs long holds
// its params as the call's own (bounded by the caps of requests in
// flight), not the budget, so that other clients are not refused while
// it runs.
//
// The waiting is x/sync/semaphore's, first come first served: a large
// body waiting for room is not passed over for ever by small ones. Its
// peak is counted beside it, for the tests and the logs.
//
// With shares (several credentials, httpguard.Shares), a client reserves
// at most its share of the budget, its first body whatever its size: a
// client that declares large bodies and sends nothing would otherwise
// hold the whole budget for the body timeout, and every other client's
// request wait for room all that time.
type byteBudget struct {
	max   int64
	share int64 // what one client may reserve; 0: no shares
	sem   *semaphore.Weighted
	used  atomic.Int64 // bytes reserved now
	peak  atomic.Int64 // the most ever reserved at once

	mu   sync.Mutex       // guards held
	held map[string]int64 // bytes reserved, by client (with shares)
}

func newByteBudget(max, share int) *byteBudget {
	return &byteBudget{max: int64(max), share: int64(share), sem: semaphore.NewWeighted(int64(max)), held: map[string]int64{}}
}

// errBodyShare refuses a body of a client that holds its share of the
// budget already.
var errBodyShare = errors.New("the client's share of the bodies being read is taken")

// acquire reserves n bytes (at most the whole budget) for client (a
// credential), waiting for others to release until ctx ends, or for
// timeout after it. It returns what it reserved. The timeout's ctx is
// made only for a reader that must wait: a timer per body is a tenth of
// what reading it costs.
func (b *byteBudget) acquire(ctx context.Context, timeout time.Duration, n int64, client string) (int64, error) {
	n = min(n, b.max)
	if !b.takeShare(client, n) {
		return 0, errBodyShare
	}
	if !b.sem.TryAcquire(n) { // refused while others wait: first come first served
		wait, cancel := context.WithTimeout(ctx, timeout)
		err := b.sem.Acquire(wait, n)
		cancel()
		if err != nil {
			b.giveShare(client, n)
			return 0, err
		}
	}
	used := b.used.Add(n)
	for {
		peak := b.peak.Load()
		if used <= peak || b.peak.CompareAndSwap(peak, used) {
			return n, nil
		}
	}
}

func (b *byteBudget) release(n int64, client string) {
	if n == 0 {
		return
	}
	b.giveShare(client, n)
	b.used.Add(-n)
	b.sem.Release(n)
}

// takeShare counts n bytes against client's share, unless it holds some
// already and n would take it past its share.
func (b *byteBudget) takeShare(client string, n int64) bool {
	if b.share == 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if held := b.held[client]; held > 0 && held+n > b.share {
		return false
	}
	b.held[client] += n
	return true
}

// giveShare gives back n bytes takeShare counted.
func (b *byteBudget) giveShare(client string, n int64) {
	if b.share == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held[client] -= n; b.held[client] <= 0 {
		delete(b.held, client)
	}
}

// high is the most bytes ever reserved at once.
func (b *byteBudget) high() int64 { return b.peak.Load() }

// inflight counts the client requests being answered, all sessions,
// against Options.MaxInflight and each client's share of it.
type inflight struct {
	n      atomic.Int64
	max    int64
	shares *httpguard.Shares
}

// load is how many requests are in flight.
func (c *inflight) load() int64 { return c.n.Load() }

// begin counts a request of client against the cap of requests in
// flight in all, and against the client's share of it; false means one
// is reached.
func (c *inflight) begin(client string) bool {
	if c.n.Add(1) > c.max {
		c.n.Add(-1)
		return false
	}
	if !c.shares.Begin(client) {
		c.n.Add(-1)
		return false
	}
	return true
}

func (c *inflight) end(client string) {
	c.shares.End(client)
	c.n.Add(-1)
}
