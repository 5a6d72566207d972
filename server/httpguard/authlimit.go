package httpguard

import (
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// authWindow is the period over which failed token attempts are counted.
const authWindow = time.Minute

// maxAuthAddrs bounds the table of client addresses with failed token
// attempts.
const maxAuthAddrs = 4096

// authLimiter counts failed token attempts per client address in fixed
// windows of authWindow; an address over the limit is refused until its
// window ends, whatever token it sends.
type authLimiter struct {
	max int
	now func() time.Time

	mu    sync.Mutex // guards addrs
	addrs map[string]*authFailures
}

type authFailures struct {
	start time.Time
	n     int
	// checking is the address's tokens being checked now (begin to end),
	// which blocked counts as failures until they are known.
	checking int
}

func newAuthLimiter(max int) *authLimiter {
	return &authLimiter{max: max, now: time.Now, addrs: map[string]*authFailures{}}
}

// blocked says how long addr must wait, zero when it may try. Its
// tokens being checked count as failures until they are known (see
// begin): an address that sends many at once gets no more tries than
// one that sends them one by one.
func (a *authLimiter) blocked(addr string) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.addrs[addr]
	if f == nil || f.n+f.checking < a.max {
		return 0
	}
	now := a.now()
	left := f.start.Add(authWindow).Sub(now)
	if left <= 0 {
		if f.checking == 0 {
			delete(a.addrs, addr)
			return 0
		}
		f.start, f.n, left = now, 0, authWindow
	}
	if f.n < a.max {
		return time.Second // until a token being checked is known
	}
	return left
}

// fail counts a failed attempt from addr, and reports whether it was the
// one that blocked addr. When the table is full, expired
// windows are forgotten, then the oldest address that is not blocked: a
// blocked address stays blocked for its whole window, however many others
// fail meanwhile. With every entry blocked, addr is not counted.
func (a *authLimiter) fail(addr string) (blocked bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.count(addr)
}

// count counts a failed attempt from addr, reporting whether it was the
// one that blocked addr. a.mu is held.
func (a *authLimiter) count(addr string) (blocked bool) {
	f := a.entry(addr, a.now())
	if f == nil {
		return false
	}
	f.n++
	return f.n == a.max
}

// entry is addr's count, made, or its window begun anew once over, as
// needed; nil when the table is full (see fail). a.mu is held.
func (a *authLimiter) entry(addr string, now time.Time) *authFailures {
	f := a.addrs[addr]
	if f != nil && now.Sub(f.start) >= authWindow {
		f.start, f.n = now, 0 // its tokens being checked stay counted
	}
	if f == nil {
		if len(a.addrs) >= maxAuthAddrs {
			a.prune(now)
			if len(a.addrs) >= maxAuthAddrs {
				return nil
			}
		}
		f = &authFailures{start: now}
		a.addrs[addr] = f
	}
	return f
}

// begin counts a token of addr's that is being checked (by the issuer,
// which may take seconds) as a failure until end says whether it was
// one: a wrong token is also a wrong guess of the static tokens, and many
// sent at once must not all be tried before the first is counted. It
// checks and counts under one lock, so that of many sent at once no more
// than the limit pass: a non-zero wait means addr is blocked and nothing
// was counted.
func (a *authLimiter) begin(addr string) (wait time.Duration) {
	if wait = a.blocked(addr); wait > 0 {
		return wait
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if f := a.addrs[addr]; f != nil && f.n+f.checking >= a.max {
		return time.Second // another got in first: until its token is known
	}
	if f := a.entry(addr, a.now()); f != nil {
		f.checking++
	}
	return 0
}

// end ends what begin began: failed counts the token as a failure (as
// fail, reporting whether it blocked addr).
func (a *authLimiter) end(addr string, failed bool) (blocked bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.addrs[addr]
	if f != nil && f.checking > 0 {
		f.checking--
	}
	switch {
	case failed:
		return a.count(addr)
	case f != nil && f.n == 0 && f.checking == 0:
		delete(a.addrs, addr) // a good token leaves nothing behind
	}
	return false
}

func (a *authLimiter) prune(now time.Time) {
	var oldest string
	for k, f := range a.addrs {
		switch {
		case now.Sub(f.start) >= authWindow:
			delete(a.addrs, k)
		case f.n >= a.max: // blocked: kept until its window ends
		case oldest == "" || f.start.Before(a.addrs[oldest].start):
			oldest = k
		}
	}
	if len(a.addrs) >= maxAuthAddrs && oldest != "" {
		delete(a.addrs, oldest)
	}
}

func (a *authLimiter) size() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.addrs)
}

// clientAddr is the key failed attempts are counted under: the client's
// IP, an IPv6 one by its /64 (one host usually holds a whole /64), every
// loopback address as one.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if ip.IsLoopback() {
		return "loopback" // 127.0.0.0/8 and ::1 are one host, with one budget
	}
	if ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return ip.String()
}

func retryAfter(d time.Duration) string {
	return strconv.Itoa(int((d + time.Second - 1) / time.Second))
}
