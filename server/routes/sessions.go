package routes

import (
	"cmp"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
)

// maxUnsubscribing bounds how many unsubscribes the hub sends at once for
// sessions that ended.
const maxUnsubscribing = 4

// Sessions is the table as the faces, the inspector and /metrics see it.
type Sessions interface {
	// Info lists the open client sessions, by id.
	Info() []SessionInfo
	// Dropped is how many notifications the hub has dropped for clients
	// that had no room for them (see Table.Dropped).
	Dropped() uint64
}

// SessionInfo is what the hub knows of one client session: who the client
// is, what initialize negotiated, and how busy and how far behind it is.
type SessionInfo struct {
	ID              string // "stdio" for the stdio client
	Transport       string // stdio, streamable-http or sse
	User            string // the caller's name, else subject; "" where the face knows none
	Subject         string // the caller's key: jwt:SUBJECT, token:NAME, none:local
	Profile         string // the profile the session sees, "" for the whole config
	ClientName      string // from initialize; "" before it
	ClientVersion   string
	ProtocolVersion string // negotiated by initialize; "" before it
	Capabilities    mcp.ClientCapabilities
	Mode            string // the mode the session is shown (mode: auto chooses per client)
	ModeWhy         string // why: the clients: rule, the config's or profile's mode, or auto's reason
	Inflight        int    // the client's requests being answered
	Dropped         uint64 // notifications the client had no room for
}

// Info lists the open client sessions, by id.
func (t *Table[S]) Info() []SessionInfo {
	list := t.List()
	out := make([]SessionInfo, 0, len(list))
	for _, s := range list {
		out = append(out, t.opts.Describe(s))
	}
	slices.SortFunc(out, func(a, b SessionInfo) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Dropped is how many notifications the hub has dropped for clients that
// had no room for them, since New, counting sessions that have ended: a
// counter that never goes down.
func (t *Table[S]) Dropped() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.droppedGone
	for _, s := range t.sessions {
		n += s.Dropped()
	}
	return n
}

// unsubscribeGone tells the upstreams that no session listens to their
// URIs any more (the unsubscribes next claimed, for a session that ended,
// say), in the background, so that ending a session never waits for an
// upstream. Each unsubscribe is bounded by list_timeout, at most
// maxUnsubscribing go out at once, and Close cancels those not done. One
// that is no longer needed when its turn comes (a session listens again)
// is not sent. gone is the callee's.
func (t *Table[S]) unsubscribeGone(gone map[string]*subscription[S]) {
	if len(gone) == 0 {
		return
	}
	spawned := t.opts.Spawn(func() {
		for uri, sent := range gone {
			select {
			case t.unsubscribing <- struct{}{}:
			case <-t.opts.Stop:
				t.abandon(gone)
				return
			}
			t.sendUnsubscribe(uri, sent)
			<-t.unsubscribing
			delete(gone, uri)
		}
	})
	if !spawned {
		t.abandon(gone)
	}
}

// abandon gives up the unsubscribes claimed for gone, not sent (the hub
// is closing): the sessions waiting for them are released, to find the
// upstream as it was.
func (t *Table[S]) abandon(gone map[string]*subscription[S]) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, sent := range gone {
		close(sent.sending)
		sent.sending = nil
	}
}
