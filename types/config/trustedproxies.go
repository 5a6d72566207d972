package config

import (
	"net/netip"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxTrustedProxies bounds http.trusted_proxies: each request's client
// address is found by matching against every entry.
const maxTrustedProxies = 64

// trustedProxies reads http.trusted_proxies: the balancers in front of
// the hub, each a CIDR prefix ("10.0.0.0/8", "fd00::/8") or a single
// address. A request whose direct peer is one of them has its client
// address taken from X-Forwarded-For (or Forwarded); any other peer's
// headers are ignored. A prefix with host bits set is refused, as it
// most likely is a typing mistake ("10.0.0.1/8").
func (p *parser) trustedProxies(n *yaml.Node, key string) []netip.Prefix {
	if n.Kind != yaml.SequenceNode {
		p.fail(n, key, "must be a list of addresses or CIDR prefixes (the balancers in front of the hub)")
		return nil
	}
	if len(n.Content) > maxTrustedProxies {
		p.fail(n, key, "lists %d entries; at most %d (use wider prefixes)", len(n.Content), maxTrustedProxies)
		return nil
	}
	out := make([]netip.Prefix, 0, len(n.Content))
	for i, v := range n.Content {
		k := key + "[" + strconv.Itoa(i) + "]"
		s, ok := p.strOK(v, k)
		if !ok {
			continue
		}
		pfx, err := ParseTrustedProxy(s)
		if err != nil {
			p.fail(v, k, "%v", err)
			continue
		}
		out = append(out, pfx)
	}
	return out
}

// ParseTrustedProxy reads one entry of http.trusted_proxies: a CIDR
// prefix without host bits, or an address (a prefix of its full length).
// An IPv4-mapped IPv6 address is taken as the IPv4 one.
func ParseTrustedProxy(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		pfx, err := netip.ParsePrefix(s) // a zone is refused here
		if err != nil {
			return netip.Prefix{}, errTrustedProxy(s)
		}
		if pfx.Masked() != pfx {
			return netip.Prefix{}, &trustedProxyError{s, "has host bits set: did you mean " + pfx.Masked().String() + "?"}
		}
		if pfx.Addr().Is4In6() && pfx.Bits() >= 96 {
			return netip.PrefixFrom(pfx.Addr().Unmap(), pfx.Bits()-96), nil
		}
		return pfx, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, errTrustedProxy(s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

type trustedProxyError struct{ entry, why string }

func (e *trustedProxyError) Error() string { return strconv.Quote(e.entry) + " " + e.why }

func errTrustedProxy(s string) error {
	return &trustedProxyError{s, "is neither an IP address nor a CIDR prefix (10.0.0.0/8, fd00::/8, 192.0.2.7)"}
}
