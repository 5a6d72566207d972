package httpguard

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/server/identity"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// GuardOptions say who may use an HTTP endpoint of the hub's. The fields
// mean what mcphttp.Options' fields of the same names mean.
type GuardOptions struct {
	Token           string            // the credential named DefaultCredential
	Tokens          map[string]string // more credentials: name -> token
	NoAuth          bool
	AllowedOrigins  []string
	Loopback        bool
	MaxAuthFailures int          // per client address a minute; default config.DefaultMaxAuthFailures
	Logger          *slog.Logger // for what the guard learns of http.auth's issuer, and tokens refused; nil: nowhere
	// Auth, when enabled, lets in JWT access tokens of its issuer too
	// (identity.go).
	Auth *config.HTTPAuth
}

// Guard checks who may use an HTTP endpoint: an allowed Origin and Host
// (DNS-rebinding protection) and the bearer token, with failed token
// attempts limited per client address. It is one implementation for the
// HTTP face and for the inspector's own listener (serve --ui), so that
// both refuse alike.
type Guard struct {
	opts  GuardOptions
	auth  *authLimiter
	creds []credential
	// callers are the callers of the static credentials by name, and
	// anyone the caller of a guard that checks no token: made once, not
	// per request.
	callers map[string]*caller
	anyone  *caller

	verifier    *identity.Verifier // checks JWTs when http.auth is on, else nil
	metadataURL string             // of the protected resource metadata, with verifier
}

// credential is a token the guard accepts, kept as its SHA-256 so that
// every comparison is of the same length.
type credential struct {
	name string
	sum  [sha256.Size]byte
}

// DefaultCredential is the name of GuardOptions.Token's credential (the
// config's http.token, or $DYNAMIC_MCP_TOKEN).
const DefaultCredential = "default"

// NoAuthCredential is the one credential of every caller when the guard
// checks no token (--insecure-no-auth): they are all one client.
const NoAuthCredential = "local"

// caller is who a request that passed Check is, in its context: the
// name of the credential its token matched and its identity, one value.
type caller struct {
	name string
	who  *identity.Identity
}

type callerKey struct{}

func callerOf(ctx context.Context) *caller {
	c, _ := ctx.Value(callerKey{}).(*caller)
	return c
}

// CredentialOf is the name of the credential a request's token matched,
// from its context: NoAuthCredential when no token is checked, "" for a
// request that has not passed a Guard's Check.
func CredentialOf(ctx context.Context) string {
	if c := callerOf(ctx); c != nil {
		return c.name
	}
	return ""
}

func withCaller(ctx context.Context, c *caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// NewGuard builds the checks opts describe.
func NewGuard(opts GuardOptions) *Guard {
	if opts.MaxAuthFailures <= 0 {
		opts.MaxAuthFailures = config.DefaultMaxAuthFailures
	}
	g := &Guard{opts: opts, auth: newAuthLimiter(opts.MaxAuthFailures)}
	if opts.Auth.Enabled() {
		g.verifier = identity.NewVerifier(*opts.Auth, opts.Logger, nil, nil)
		g.metadataURL = ResourceMetadataURL(opts.Auth.Audience)
	}
	if opts.Token != "" {
		g.creds = append(g.creds, credential{name: DefaultCredential, sum: sha256.Sum256([]byte(opts.Token))})
	}
	for name, t := range opts.Tokens {
		if t != "" {
			g.creds = append(g.creds, credential{name: name, sum: sha256.Sum256([]byte(t))})
		}
	}
	g.anyone = &caller{name: NoAuthCredential, who: &identity.Identity{Kind: identity.KindNone, Subject: NoAuthCredential}}
	g.callers = make(map[string]*caller, len(g.creds))
	for _, c := range g.creds {
		g.callers[c.name] = &caller{name: c.name, who: &identity.Identity{Kind: identity.KindToken, Subject: c.name}}
	}
	return g
}

// match is the name of the credential whose token is token, or "". Every
// credential is compared, each in constant time, whichever matches.
func (g *Guard) match(token string) string {
	sum := sha256.Sum256([]byte(token))
	name := ""
	for _, c := range g.creds {
		if subtle.ConstantTimeCompare(sum[:], c.sum[:]) == 1 {
			name = c.name
		}
	}
	return name
}

// Check serves next behind every check: Origin, Host and the bearer
// token, which must be one of the guard's credentials; next finds the
// credential's name with CredentialOf. The token is the hub's own; it is
// never passed to an upstream.
func (g *Guard) Check(next http.Handler) http.Handler {
	return g.CheckPage(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := NoAuthCredential
		var who *identity.Identity
		if !g.opts.NoAuth {
			// An address that failed too often is not even checked, so
			// that guessing the token is slowed to a few tries a minute.
			addr := clientAddr(r)
			if wait := g.auth.blocked(addr); wait > 0 {
				w.Header().Set("Retry-After", retryAfter(wait))
				refuse(w, r, "Too Many Requests: too many failed token attempts", http.StatusTooManyRequests)
				return
			}
			header := r.Header.Get("Authorization")
			scheme, token, ok := strings.Cut(header, " ")
			ok = ok && strings.EqualFold(scheme, "Bearer") // case-insensitive (RFC 9110 section 11.1)
			var refused error
			if ok {
				name = g.match(token)
			}
			checking := false // the token is counted by begin until end
			if ok && name == "" && token != "" && g.verifier != nil {
				if wait := g.auth.begin(addr); wait > 0 {
					w.Header().Set("Retry-After", retryAfter(wait))
					refuse(w, r, "Too Many Requests: too many failed token attempts", http.StatusTooManyRequests)
					return
				}
				checking = true
				if who, ok, refused = g.authenticate(w, r, token); !ok {
					g.auth.end(addr, false)
					return
				}
				if who != nil {
					name = who.Key()
				}
			}
			if !ok || name == "" {
				// Only a wrong token counts: a request with none (what an
				// <img> on any web page sends) guesses nothing, and must not
				// lock the address's real clients out.
				failed := header != "" && !signed(refused)
				nowBlocked := false
				switch {
				case checking:
					nowBlocked = g.auth.end(addr, failed)
				case failed:
					nowBlocked = g.auth.fail(addr)
				}
				if nowBlocked && g.opts.Logger != nil {
					g.opts.Logger.Warn("too many wrong bearer tokens: the client address is refused until its minute is over", "addr", addr)
				}
				if refused != nil && g.opts.Logger != nil {
					g.opts.Logger.Debug("refused a bearer token", "addr", addr, "reason", refused)
				}
				w.Header().Set("WWW-Authenticate", g.challenge(header != "", refused))
				refuse(w, r, "Unauthorized: a valid bearer token is required", http.StatusUnauthorized)
				return
			}
			if checking {
				g.auth.end(addr, false)
			}
		}
		var c *caller
		switch {
		case who != nil:
			c = &caller{name: name, who: who}
		case g.opts.NoAuth:
			c = g.anyone
		default:
			c = g.callers[name] // a static credential's, the same for each of its requests
		}
		next.ServeHTTP(w, r.WithContext(withCaller(r.Context(), c)))
	}))
}

// CheckPage serves next behind the Origin and Host checks only: for a
// page a browser loads by navigating to it, which cannot carry a bearer
// token. Such a page holds no data; what it shows it fetches from
// endpoints behind Check.
func (g *Guard) CheckPage(next http.Handler) http.Handler {
	next = UnreadGET(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !g.originAllowed(origin) {
			refuse(w, r, "Forbidden: origin not allowed", http.StatusForbidden)
			return
		}
		if g.opts.Loopback && !loopbackHost(r.Host) {
			refuse(w, r, "Forbidden: host not allowed", http.StatusForbidden)
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

// loopbackHost is config.LoopbackHost for a Host header's or URL's
// host[:port].
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return config.LoopbackHost(strings.Trim(host, "[]"))
}

// refuse answers r, refused before its body was read, with code and msg
// (see CloseUnread).
func refuse(w http.ResponseWriter, r *http.Request, msg string, code int) {
	CloseUnread(w, r)
	http.Error(w, msg, code)
}

// CloseUnread closes the connection after the response to r when r has a
// body that is answered unread: else Go's server reads up to 256 KiB of
// it before the response goes out (to keep the connection), with no
// deadline, and a client that sends no more of its body (a length under
// 256 KiB, or none: chunked) holds the response, the connection and a
// goroutine as long as it likes. Called before the response is written.
func CloseUnread(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
}

// UnreadGET is next, a route that reads no body of a GET or HEAD (none
// does: /metrics, /healthz, /readyz, the inspector's pages and API), with
// such a request's body answered unread (CloseUnread): a GET to one with
// a body that never comes is answered at once, its connection closed.
// Every route behind the checks (CheckPage, Check, CheckOperator) has it.
func UnreadGET(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			CloseUnread(w, r)
		}
		next.ServeHTTP(w, r)
	})
}

// UnreadBody is next, an operator's route (/metrics, /healthz, /readyz,
// the inspector), with the body of every request answered unread
// (CloseUnread), whatever its method: such a route reads none, or a small
// one (an approval's note), whose connection is then closed for nothing
// but a reconnect. A POST to /healthz with a body that never comes is
// answered at once, not held with its connection as long as its client
// likes. An MCP route, which reads the bodies of its POSTs on a kept
// connection, has UnreadGET only.
func UnreadBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		CloseUnread(w, r)
		next.ServeHTTP(w, r)
	})
}
