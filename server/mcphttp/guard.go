package mcphttp

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// GuardOptions say who may use an HTTP endpoint of the hub's. The fields
// mean what Options' fields of the same names mean.
type GuardOptions struct {
	Token           string
	NoAuth          bool
	AllowedOrigins  []string
	Loopback        bool
	MaxAuthFailures int // per client address a minute; default config.DefaultMaxAuthFailures
}

// Guard checks who may use an HTTP endpoint: an allowed Origin and Host
// (DNS-rebinding protection) and the bearer token, with failed token
// attempts limited per client address. It is one implementation for the
// HTTP face and for the inspector's own listener (serve --ui), so that
// both refuse alike.
type Guard struct {
	opts GuardOptions
	auth *authLimiter
}

// NewGuard builds the checks opts describe.
func NewGuard(opts GuardOptions) *Guard {
	if opts.MaxAuthFailures <= 0 {
		opts.MaxAuthFailures = Options{}.withDefaults().MaxAuthFailures
	}
	return &Guard{opts: opts, auth: newAuthLimiter(opts.MaxAuthFailures)}
}

// Check serves next behind every check: Origin, Host and the bearer
// token. The token is the hub's own; it is never passed to an upstream.
func (g *Guard) Check(next http.Handler) http.Handler {
	return g.CheckPage(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.opts.NoAuth {
			// An address that failed too often is not even checked, so
			// that guessing the token is slowed to a few tries a minute.
			addr := clientAddr(r)
			if wait := g.auth.blocked(addr); wait > 0 {
				w.Header().Set("Retry-After", retryAfter(wait))
				http.Error(w, "Too Many Requests: too many failed token attempts", http.StatusTooManyRequests)
				return
			}
			header := r.Header.Get("Authorization")
			token, ok := strings.CutPrefix(header, "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(g.opts.Token)) != 1 {
				// Only a wrong token counts: a request with none (what an
				// <img> on any web page sends) guesses nothing, and must not
				// lock the address's real clients out.
				if header != "" {
					g.auth.fail(addr)
				}
				w.Header().Set("WWW-Authenticate", `Bearer realm="dynamic-mcp"`)
				http.Error(w, "Unauthorized: a valid bearer token is required", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	}))
}

// CheckPage serves next behind the Origin and Host checks only: for a
// page a browser loads by navigating to it, which cannot carry a bearer
// token. Such a page holds no data; what it shows it fetches from
// endpoints behind Check.
func (g *Guard) CheckPage(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !g.originAllowed(origin) {
			http.Error(w, "Forbidden: origin not allowed", http.StatusForbidden)
			return
		}
		if g.opts.Loopback && !loopbackHost(r.Host) {
			http.Error(w, "Forbidden: host not allowed", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (g *Guard) originAllowed(origin string) bool {
	for _, o := range g.opts.AllowedOrigins {
		if strings.EqualFold(o, origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && loopbackHost(u.Host)
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
