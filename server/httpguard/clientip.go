package httpguard

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Behind a balancer every request's direct peer is the balancer: keyed by
// it, one client's failed tokens would lock every client out. The
// balancers listed in http.trusted_proxies say who their client was in
// X-Forwarded-For (nginx: $proxy_add_x_forwarded_for, which appends the
// address it got the request from to what the client sent); the client is
// the rightmost address there that is not itself a trusted proxy, since
// everything left of it was written by a party that is not trusted
// (a client can send any X-Forwarded-For it likes). RFC 7239's Forwarded
// header is read the same way when X-Forwarded-For is absent. A peer not
// in the list is the client, whatever it sends.

// maxForwardedHops bounds the addresses of a forwarding header looked at:
// a chain of more trusted proxies than this is not believed further.
const maxForwardedHops = 32

// clientIP is the address of the client r came from: its direct peer,
// or, when that peer is one of trusted, the rightmost address of its
// forwarding header that is not trusted (the leftmost one when all are).
// An entry that does not parse stops the walk: the client is then the
// hop right of it, a trusted proxy. ok is false when r.RemoteAddr is not
// an address (a test's, or a Unix socket's).
func clientIP(r *http.Request, trusted []netip.Prefix) (addr netip.Addr, ok bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	peer = peer.Unmap().WithZone("")
	if !isTrusted(peer, trusted) {
		return peer, true
	}
	hops := forwardedFor(r.Header)
	client := peer
	for i := len(hops) - 1; i >= 0 && len(hops)-i <= maxForwardedHops; i-- {
		a, ok := parseHop(hops[i])
		if !ok {
			break
		}
		client = a
		if !isTrusted(a, trusted) {
			break
		}
	}
	return client, true
}

// isTrusted reports whether a is in one of trusted.
func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// forwardedFor are the hops of X-Forwarded-For (every such header, in
// order, split at commas), or else the for= values of Forwarded (RFC 7239
// section 4), oldest first.
func forwardedFor(h http.Header) []string {
	var hops []string
	if xff := h.Values("X-Forwarded-For"); len(xff) > 0 {
		for _, v := range xff {
			hops = append(hops, strings.Split(v, ",")...)
		}
		return hops
	}
	for _, v := range h.Values("Forwarded") {
		for _, elem := range strings.Split(v, ",") {
			found := false
			for _, pair := range strings.Split(elem, ";") {
				name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if ok && strings.EqualFold(name, "for") {
					hops = append(hops, value)
					found = true
					break
				}
			}
			if !found {
				hops = append(hops, "") // an element without for=: a hop unknown
			}
		}
	}
	return hops
}

// parseHop is one hop of a forwarding header: an address, IPv6 possibly
// in brackets, possibly quoted (Forwarded), possibly with a port. A name
// ("unknown", an obfuscated "_id", a host name) is not an address.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), a.Zone() == ""
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), ap.Addr().Zone() == ""
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil && a.Is6() && a.Zone() == "" {
			return a.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// WithClientAddr is r with RemoteAddr its client's address (clientIP),
// port 0, when its peer is a trusted proxy, so that whatever keys on or
// logs RemoteAddr past this point (the failed-token lockout, the logs)
// sees the client and not the balancer. r itself when nothing is trusted
// or the address is the peer's.
func WithClientAddr(r *http.Request, trusted []netip.Prefix) *http.Request {
	if len(trusted) == 0 {
		return r
	}
	a, ok := clientIP(r, trusted)
	if !ok {
		return r
	}
	addr := netip.AddrPortFrom(a, 0).String()
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil && host == a.String() {
		return r
	}
	r2 := r.WithContext(r.Context())
	r2.RemoteAddr = addr
	return r2
}
