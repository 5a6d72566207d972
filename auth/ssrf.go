package auth

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
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

// forbidden are addresses no OAuth request may reach: link-local ranges
// (where cloud metadata services live) and known metadata addresses.
func forbidden(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() {
		return true
	}
	for _, m := range []string{"169.254.169.254", "fd00:ec2::254", "100.100.100.200"} {
		if ip == netip.MustParseAddr(m) {
			return true
		}
	}
	return false
}

// SafeClient is an HTTP client for OAuth requests whose dialer refuses
// forbidden addresses after DNS resolution, so a name cannot be pointed at
// a metadata service, and which follows no redirect to a plain-http URL.
func SafeClient() *http.Client {
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
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}
	tr.Proxy = nil
	return &http.Client{Transport: tr, Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return fmt.Errorf("too many redirects")
		}
		return CheckURL(req.URL.String())
	}}
}
