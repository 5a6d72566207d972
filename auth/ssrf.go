package auth

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"sync"
	"syscall"
	"time"
)

// CheckURL refuses a URL learned from a server that is not https, unless it
// points at loopback (for local development servers).
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not a URL", raw)
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
		return nil
	}
	return fmt.Errorf("%s must be https (http is allowed for loopback only)", raw)
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// metadataAddrs are cloud metadata services outside the link-local ranges
// (169.254.169.254 is inside them).
var metadataAddrs = []netip.Addr{netip.MustParseAddr("fd00:ec2::254"), netip.MustParseAddr("100.100.100.200")}

// forbidden are addresses no OAuth request may reach: link-local ranges
// (where cloud metadata services live) and known metadata addresses.
func forbidden(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || slices.Contains(metadataAddrs, ip)
}

// SafeClient is an HTTP client for OAuth requests whose dialer refuses
// forbidden addresses after DNS resolution, so a name cannot be pointed at
// a metadata service, and which follows no redirect to a plain-http URL.
// It is one client, so every sign-in and refresh shares its connections.
// oauthex refuses more: any private address named by IP (10/8,
// 192.168/16 ...), before asking, in a metadata URL or an authorization
// server's; an authorization server on the company network is one.
var SafeClient = sync.OnceValue(func() *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return err
		}
		if forbidden(ip) {
			return fmt.Errorf("refusing to connect to %s: link-local or metadata address", ip)
		}
		return nil
	}}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = d.DialContext
	tr.Proxy = nil
	return &http.Client{Transport: replayable{tr}, Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return fmt.Errorf("too many redirects")
		}
		return CheckURL(req.URL.String())
	}}
})

// replayable lets Go's transport send a POST again on a new connection
// when the kept-alive one it was sent on broke before any answer came, as
// it does a GET (net/http's rule for a request with an Idempotency-Key
// header; a nil value sends none). An authorization server that closes
// idle connections (node's after 5 s) reset a token POST sent on one as
// it closed it, after a sign-in that took a few seconds ("read: connection
// reset by peer", the exchange lost); a POST the server answered is never
// sent again.
type replayable struct{ *http.Transport }

func (t replayable) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.GetBody != nil && r.Header.Get("Idempotency-Key") == "" {
		r = r.Clone(r.Context())
		r.Header["Idempotency-Key"] = nil
	}
	return t.Transport.RoundTrip(r)
}
