package config

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// http.trusted_proxies reads CIDR prefixes and single addresses (IPv4,
// IPv6, IPv4-mapped taken as IPv4); a prefix with host bits, a name, a
// zone, or not a list is an error naming its line.
func TestTrustedProxies(t *testing.T) {
	const groups = "groups:\n  g: { description: d, command: echo }\n"
	cfg, err := Parse("c.yaml", strings.NewReader("http:\n  trusted_proxies: [10.0.0.0/8, \"fd00::/8\", 192.0.2.7, \"::ffff:198.51.100.0/120\", \"2001:db8::1\"]\n"+groups))
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("192.0.2.7/32"),
		netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("2001:db8::1/128")}
	if !slices.Equal(cfg.HTTP.TrustedProxies, want) {
		t.Errorf("trusted_proxies %v, want %v", cfg.HTTP.TrustedProxies, want)
	}
	if cfg, err := Parse("c.yaml", strings.NewReader(groups)); err != nil || cfg.HTTP.TrustedProxies != nil {
		t.Errorf("default: %v %v", err, cfg.HTTP.TrustedProxies)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"http:\n  trusted_proxies: 10.0.0.0/8\n", "c.yaml:2: http.trusted_proxies: must be a list"},
		{"http:\n  trusted_proxies: [10.0.0.1/8]\n", `c.yaml:2: http.trusted_proxies[0]: "10.0.0.1/8" has host bits set: did you mean 10.0.0.0/8?`},
		{"http:\n  trusted_proxies:\n    - 10.0.0.0/8\n    - nginx.internal\n", `c.yaml:4: http.trusted_proxies[1]: "nginx.internal" is neither an IP address nor a CIDR prefix`},
		{"http:\n  trusted_proxies: [\"fe80::1%eth0\"]\n", `http.trusted_proxies[0]: "fe80::1%eth0" is neither`},
		{"http:\n  trusted_proxies: [10.0.0.0/33]\n", `http.trusted_proxies[0]: "10.0.0.0/33" is neither`},
		{"http:\n  trusted_proxies: [[1]]\n", "http.trusted_proxies[0]"},
	} {
		_, err := Parse("c.yaml", strings.NewReader(tc.yaml+groups))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// ParseTrustedProxy never panics, and what it accepts is a valid prefix
// without host bits, zone or IPv4-mapped form, which contains the
// address it was written with.
func FuzzParseTrustedProxy(f *testing.F) {
	for _, s := range []string{"10.0.0.0/8", "::ffff:1.2.3.0/120", "fe80::1%eth0", "1.2.3.4", "2001:db8::/32", "x", "/", "1.2.3.4/-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseTrustedProxy(s)
		if err != nil {
			return
		}
		if !p.IsValid() || p.Masked() != p || p.Addr().Zone() != "" || p.Addr().Is4In6() {
			t.Fatalf("%q parsed as %v", s, p)
		}
	})
}
