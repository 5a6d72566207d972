package relay

import (
	"errors"
	"sync"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// What one session may publish to the other replicas (relay.go): its
// answers to another replica's requests, its cancellations and log
// levels. Each is a NOTIFY every replica reads (one over a NOTIFY's size,
// a row of the store too): without a bound, a client that POSTs answers
// to requests never sent, with ids naming another replica, or a storm of
// cancellations, would load the database and every replica's inbox, where
// other clients' answers wait. A session gets relayBurst messages, then
// relayRate a second; in bytes, twice the largest message, then
// relayBytesRate a second. A legitimate client answers the hub's
// requests, a few at a time. (The burst of bytes is at least twice
// shared.MaxEventBytes.) Each GET of the session's stream counts as
// a message too (it asks the store for the stream's last number), and one
// that resumes as shared.MaxEventBytes (what it may read back): a client
// that opens its stream again and again does not have the database read
// its events each time.
const (
	relayBurst     = 64
	relayRate      = 16
	relayBytesRate = 1 << 20
)

// ErrBudget is a message over its session's relay budget.
var ErrBudget = errors.New("over the session's budget of messages relayed to other replicas")

// relayBudget is one session's token buckets of messages and bytes.
type relayBudget struct {
	mu    sync.Mutex // guards the rest
	last  time.Time  // zero: full
	msgs  float64
	bytes float64
}

// take takes one message of n bytes, with maxBytes the largest message;
// false when either bucket lacks it (nothing is taken then).
func (b *relayBudget) take(now time.Time, n, maxBytes int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	burstBytes := 2 * float64(max(maxBytes, shared.MaxEventBytes)) // room for a resuming GET whatever the largest message
	if b.last.IsZero() {
		b.msgs, b.bytes = relayBurst, burstBytes
	} else if d := now.Sub(b.last).Seconds(); d > 0 {
		b.msgs = min(relayBurst, b.msgs+d*relayRate)
		b.bytes = min(burstBytes, b.bytes+d*relayBytesRate)
	}
	b.last = now
	if b.msgs < 1 || b.bytes < float64(n) {
		return false
	}
	b.msgs--
	b.bytes -= float64(n)
	return true
}

// AllowedGET takes the room for a GET of hs's stream from its relay
// budget; resumes: it has a Last-Event-ID.
func (r *Relay) AllowedGET(hs *Stream, resumes bool) bool {
	n := 0
	if resumes {
		n = shared.MaxEventBytes
	}
	if hs.budget.take(r.opts.Now(), n, r.opts.MaxMessageSize()) {
		return true
	}
	r.logger.Debug("relay: a GET over its session's budget refused", "session", hs.peer.ID())
	return false
}
