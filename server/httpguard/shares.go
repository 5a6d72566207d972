package httpguard

import (
	"sync"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// Shares bound what one client holds of the HTTP face's caps: with more
// than one credential each is a client of its own (see CredentialOf), and
// none may hold more than its share (http.client_share, half by
// default) of the sessions, of the requests in flight or of the bytes of
// bodies being read (Of), so that one client cannot
// turn the caps on the others. With one credential every caller is the
// same party and there are no shares.
type Shares struct {
	sessions int     // a client's share of the sessions; 0 when shares are off
	inflight int     // a client's share of the requests in flight
	part     float64 // the part of a cap a client's share is

	mu   sync.Mutex     // guards busy
	busy map[string]int // requests in flight, by client
}

// NewShares are the shares of maxSessions and maxInflight (share of each;
// 0: config.DefaultClientShare) among the clients of a guard that accepts
// credentials of them (Guard.Credentials).
func NewShares(maxSessions, maxInflight int, share float64, credentials int) *Shares {
	if share <= 0 {
		share = config.DefaultClientShare
	}
	if credentials < 2 || share >= 1 {
		return &Shares{}
	}
	return &Shares{sessions: config.ShareOf(maxSessions, share), inflight: config.ShareOf(maxInflight, share), part: share, busy: map[string]int{}}
}

// Of is a client's share of limit, another cap of the face's (the bytes
// of bodies being read); 0 when shares are off.
func (c *Shares) Of(limit int) int {
	if c.sessions == 0 {
		return 0
	}
	return config.ShareOf(limit, c.part)
}

// Sessions is a client's share of the sessions; 0 when shares are off.
func (c *Shares) Sessions() int { return c.sessions }

// ClientOf is the client a credential is for the shares: itself, or ""
// when there are none.
func (c *Shares) ClientOf(credential string) string {
	if c.sessions == 0 {
		return ""
	}
	return credential
}

// Begin counts a request of client against its share of the requests in
// flight; false when the client holds its share already.
func (c *Shares) Begin(client string) bool {
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

// End takes back a request Begin counted.
func (c *Shares) End(client string) {
	if client == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy[client]--; c.busy[client] <= 0 {
		delete(c.busy, client)
	}
}

// Credentials is how many credentials the guard accepts: with http.auth,
// every user a JWT names is a client of its own, so at least two.
func (g *Guard) Credentials() int {
	if g.verifier != nil {
		return max(len(g.creds), 2)
	}
	return len(g.creds)
}
