package mcphttp

import (
	"sync"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// clientShares bounds what one client holds of the face's caps: with more
// than one credential each is a client of its own (see CredentialOf), and
// none may hold more than its share (Options.ClientShare, half by
// default) of MaxSessions or of MaxInflight, so that one client cannot
// turn the caps on the others. With one credential every caller is the
// same party and there are no shares.
type clientShares struct {
	sessions int // a client's share of MaxSessions; 0 when shares are off
	inflight int // a client's share of MaxInflight

	mu   sync.Mutex     // guards busy
	busy map[string]int // requests in flight, by client
}

func newClientShares(opts Options, credentials int) *clientShares {
	share := opts.ClientShare
	if share <= 0 {
		share = config.DefaultClientShare
	}
	if credentials < 2 || share >= 1 {
		return &clientShares{}
	}
	return &clientShares{sessions: config.ShareOf(opts.MaxSessions, share), inflight: config.ShareOf(opts.MaxInflight, share), busy: map[string]int{}}
}

// on says whether clients have shares at all.
func (c *clientShares) on() bool { return c.sessions > 0 }

// clientOf is the client a credential is for the shares: itself, or ""
// when there are none.
func (c *clientShares) clientOf(credential string) string {
	if !c.on() {
		return ""
	}
	return credential
}

// begin counts a request of client against its share of MaxInflight;
// false when the client holds its share already.
func (c *clientShares) begin(client string) bool {
	if client == "" {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy[client] >= c.inflight {
		return false
	}
	c.busy[client]++
	return true
}

func (c *clientShares) end(client string) {
	if client == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy[client]--; c.busy[client] <= 0 {
		delete(c.busy, client)
	}
}

// credentials is how many credentials the guard accepts: with http.auth,
// every user a JWT names is a client of its own, so at least two.
func (g *Guard) credentials() int {
	if g.verifier != nil {
		return max(len(g.creds), 2)
	}
	return len(g.creds)
}
