package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/transport"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// ClientInfo is how the hub introduces itself to upstream servers.
var ClientInfo = mcp.Implementation{Name: "dynamic-mcp", Version: "dev"}

// RPCError is a JSON-RPC error an upstream answered with. The downstream
// boundary passes it to the client unchanged (its data byte for byte).
type RPCError = jsonrpc.Error

// conn is one live session with an upstream: a jsonrpc.Conn over the
// child's pipes (a line stream) or over an HTTP stream, and the child if
// there is one. Everything the server sends is handled raw: its
// notifications and requests reach the hub with their params byte for
// byte, and the hub's requests reach it with the params the client sent.
type conn struct {
	id      ConnID // this connection's, unique in the process
	rpc     *jsonrpc.Conn
	stream  jsonrpc.Stream       // what rpc runs over
	http    transport.HTTPStream // the same stream, for a remote server; nil for stdio
	sse     bool                 // http is legacy SSE
	proc    *transport.Process   // nil for remote servers
	auth    *auth.Source         // an OAuth sign-in; nil when the server has none
	init    *mcp.InitializeResult
	version string           // the negotiated protocol version
	meta    []jsonrpc.Member // _meta every request carries on a 2026-07-28 session
	logger  *slog.Logger
	junk    atomic.Uint64 // lines or messages refused as not JSON-RPC (see refused)

	lostMu      sync.Mutex // guards lostErr and lostExpired
	lostErr     error      // why the hub gave up on a remote session (lose)
	lostExpired bool       // lose said the server ended the session

	endOnce sync.Once
	endErr  error // how the session ended, once it has (see err)

	callsMu sync.Mutex             // guards calls
	calls   map[string]trackedCall // a remote server's requests in flight, by id (see relatedCall)

	listen *upstreamListen // a 2026-07-28 session's listen (see startListen); nil for older sessions
}

// serverHandlers take what the server sends: its notifications, on the
// reading goroutine (they must not block), and its requests, each on a
// goroutine of the connection's, at most maxOutstanding at once.
type serverHandlers struct {
	id     ConnID // the connection's (see newConnID), known to notify before dial returns
	notify func(method string, params json.RawMessage)
	// request is given the request of ours the server's came in the
	// answer to, where the transport says (zero otherwise).
	request func(ctx context.Context, related trackedCall, method string, params json.RawMessage) (json.RawMessage, error)
	// paramHeaders names a tools/call's Mcp-Param-* headers, for a remote
	// server on 2026-07-28 (see Server.paramHeaders); nil for none.
	paramHeaders func(params json.RawMessage) map[string]string
	// signInIgnored is told why a sign-in on file is not used
	// (auth.ErrOtherResource); nil for no one.
	signInIgnored func(err error)
	// stderr is what a child's stderr may log, the server's over all
	// its starts (Server.stderr); nil: each child's own.
	stderr *transport.StderrBudget
}

// signInIgnored logs why a sign-in on file of user's ("" the hub's own)
// was not used (err, an auth.ErrOtherResource), once per server for the
// hub's own and once per user for a user's (auth: per-user), naming the
// user: without it the server's refusal of a connection without a token
// is all the log would show.
func (s *Server) signInIgnored(user userConn) func(err error) {
	return func(err error) {
		if !s.firstIgnored(user) {
			return
		}
		var attrs []any
		if user != "" {
			attrs = append(attrs, "user", string(user))
		}
		attrs = append(attrs, "err", err)
		s.logger.Warn("a sign-in on file is not used: it was made for another server's resource, so its token is not sent to this one; sign in to this server again", attrs...)
	}
}

// maxIgnoredUsers bounds the users whose ignored sign-in a server
// remembers having logged (firstIgnored): a user's beyond them is not
// logged.
const maxIgnoredUsers = 1024

// firstIgnored reports whether user's ignored sign-in ("" the hub's own)
// is not logged yet, and notes that it is now.
func (s *Server) firstIgnored(user userConn) bool {
	s.ignoredMu.Lock()
	defer s.ignoredMu.Unlock()
	if s.ignored[user] || user != "" && len(s.ignored) >= maxIgnoredUsers {
		return false
	}
	if s.ignored == nil {
		s.ignored = map[userConn]bool{}
	}
	s.ignored[user] = true
	return true
}

// dial starts the server and runs the MCP handshake, bounded by connect
// (see Server.configuredConnect and schedule.connectTimeout). ctx is the
// connection's lifetime. Every handler is in place before the connection
// reads its first message. A try that ran out of connect fails with a
// *connectTimeout.
func dial(ctx context.Context, cfg *config.Server, settings config.ServerSettings, connect time.Duration, caps mcp.ClientCapabilities, tokens *auth.Store, logger *slog.Logger,
	h serverHandlers) (*conn, error) {
	c := &conn{id: h.id, logger: logger, calls: map[string]trackedCall{}}
	switch cfg.Transport {
	case config.TransportStdio:
		proc, err := transport.StartProcess(transport.ProcessSpec{
			Command: cfg.Command, Args: cfg.Args, Env: cfg.Env, Hide: cfg.Hide, Dir: cfg.Cwd, Grace: settings.StopGrace, Stderr: h.stderr,
		}, logger)
		if err != nil {
			return nil, err
		}
		c.proc = proc
		c.stream = jsonrpc.NewLineStream(proc.Stdout(), proc.Stdin(), settings.MaxMessageSize)
	default:
		var authorization func(context.Context) (string, error)
		if tokens != nil {
			src, err := auth.NewSource(tokens, cfg.ID(), cfg.URL)
			switch {
			case err == nil:
				c.auth, authorization = src, src.Header
			case !errors.Is(err, auth.ErrNoToken):
				return nil, err
			case errors.Is(err, auth.ErrOtherResource) && h.signInIgnored != nil:
				h.signInIgnored(err)
			}
		}
		hs, err := transport.NewHTTP(ctx, cfg, settings, authorization, logger)
		if err != nil {
			if authErr := c.authFailure(ctx, cfg, err); authErr != nil {
				return nil, authErr
			}
			return nil, err
		}
		c.http, c.stream = hs, hs
		c.sse = cfg.Transport == config.TransportSSE
		if h.paramHeaders != nil {
			hs.SetParamHeaders(h.paramHeaders)
		}
	}
	c.rpc = jsonrpc.NewConn(c.stream, jsonrpc.ConnOptions{
		MaxMessageSize: settings.MaxMessageSize,
		MaxInflight:    maxOutstanding,
		Handle: func(ctx context.Context, m *jsonrpc.Message) (json.RawMessage, error) {
			return h.request(ctx, c.relatedCall(m.ID), m.Method, m.Params)
		},
		Notify:       func(m *jsonrpc.Message) { h.notify(m.Method, m.Params) },
		Refused:      c.refused,
		CancelParams: cancelParams,
		Panicked: func(method string, v any, stack []byte) {
			c.logger.Error("panic handling what the upstream sent", "method", method, "panic", v, "stack", string(stack))
		},
		Quiet: true,
	})
	c.rpc.Start()
	hctx, cancel := context.WithTimeout(ctx, connect)
	defer cancel()
	if err := c.handshake(hctx, caps); err != nil {
		switch {
		case ctx.Err() != nil:
			// The hub stops the server: the child is not dying of itself,
			// and explain would wait its 2 s for nothing (every stop of a
			// hub whose upstream was still in its handshake took them).
		case hctx.Err() != nil:
			err = connectTimeoutError(cfg, connect)
		default:
			err = c.explain(err)
		}
		c.close()
		if authErr := c.authFailure(ctx, cfg, err); authErr != nil {
			return nil, authErr
		}
		return nil, err
	}
	c.startListen(ctx)
	return c, nil
}

// maxJunkLogged bounds the warnings of what is not JSON-RPC that one
// connection logs: a server that writes its own log to stdout, or floods
// it, would otherwise write a warning a line into the hub's log (the
// shared hub's is a file) as fast as it writes. The rest are logged at
// debug.
const maxJunkLogged = 10

// refused logs what the connection refused of the server's.
func (c *conn) refused(err error, msg []byte) {
	switch {
	case errors.Is(err, jsonrpc.ErrNotJSON):
		level := slog.LevelWarn
		switch n := c.junk.Add(1); {
		case n == maxJunkLogged+1:
			c.logger.Warn("upstream keeps writing what is not JSON-RPC; skipped, and logged at debug from now on")
			fallthrough
		case n > maxJunkLogged:
			level = slog.LevelDebug
		}
		if c.http != nil {
			c.logger.Log(context.Background(), level, "upstream sent a message that is not JSON-RPC; skipped", "message", preview(msg))
		} else {
			c.logger.Log(context.Background(), level, "upstream wrote a line that is not JSON-RPC; skipped", "line", preview(msg))
		}
		return
	case errors.Is(err, jsonrpc.ErrLateAnswer):
		// The answer to a request given up, such as the server/discover
		// of a server that does not speak 2026-07-28, answered after
		// initialize settled the session: expected, harmless.
		c.logger.Debug("upstream answered late; dropped", "err", err, "start", preview(msg))
		return
	}
	c.logger.Error("upstream message refused", "err", err, "start", preview(msg))
}

func preview(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

// request sends one raw JSON-RPC request and returns the raw result. An
// error the server answered with is an *RPCError. When ctx ends first the
// connection tells the server with notifications/cancelled and drops a
// late reply.
func (c *conn) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return c.requestFor(&callBound{parent: ctx}, trackedCall{}, method, params)
}

// requestFor is request made for the call tc (see Server.trackCall),
// bounded by b: on a remote server, what it sends in the answer comes back
// tied to tc.
func (c *conn) requestFor(b *callBound, tc trackedCall, method string, params any) (json.RawMessage, error) {
	p, err := jsonrpc.Params(params)
	if err != nil {
		return nil, err
	}
	if c.watches(method) {
		return c.watch(method, p) // 2026-07-28 has a listen's resources instead
	}
	if c.meta != nil {
		if p, err = withMeta(p, ownMeta(c.meta, p)); err != nil {
			return nil, err
		}
	} else if p, err = withoutModernMeta(p); err != nil {
		return nil, err
	}
	var tell func(id json.RawMessage)
	if c.http != nil {
		// What the server asks in the answer to this request is tied to
		// it: to the client session it is for (see relatedCall).
		var sent json.RawMessage
		tell = func(id json.RawMessage) {
			sent = id
			c.callsMu.Lock()
			c.calls[string(id)] = tc
			c.callsMu.Unlock()
		}
		defer func() {
			if sent != nil {
				c.callsMu.Lock()
				delete(c.calls, string(sent))
				c.callsMu.Unlock()
			}
		}()
	}
	res, err := c.rpc.CallSentBy(b.parent, b.deadline, method, p, tell)
	switch {
	case err == nil:
		return res, nil
	case b.parent.Err() != nil:
		return nil, b.parent.Err()
	case err == context.DeadlineExceeded:
		return nil, err
	case errors.Is(err, jsonrpc.ErrClosed):
		// The connection is ending: say how, once it has.
		ctx := b.context()
		select {
		case <-c.rpc.Done():
			return nil, c.err()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return nil, err
}

// watches reports whether method is one watch answers on this session.
func (c *conn) watches(method string) bool {
	return c.listen != nil && (method == "resources/subscribe" || method == "resources/unsubscribe")
}

// withMeta splices meta into the _meta of params, each member replacing
// one of the same key; every other byte of params is kept. Params that are
// not an object cannot carry _meta and pass as they are.
func withMeta(params json.RawMessage, meta []jsonrpc.Member) (json.RawMessage, error) {
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage(`{}`)
	}
	old := jsonrpc.Field(params, "_meta")
	if old == nil || old[0] != '{' {
		old = []byte(`{}`)
	}
	merged := old
	for _, m := range meta {
		var err error
		if merged, err = jsonrpc.SetField(merged, m.Key, m.Value); err != nil {
			return nil, err
		}
	}
	out, err := jsonrpc.SetField(params, "_meta", merged)
	if errors.Is(err, jsonrpc.ErrNotObject) {
		return params, nil
	}
	return out, err
}

// modernMetaKeys are the _meta members by which a request of 2026-07-28
// says its version and who sent it with what capabilities: a client's,
// forwarded to a server of an earlier version, would tell that server the
// request is of a version the session is not (mcp-go's server answers
// -32020 to a version in _meta that its header does not name).
var modernMetaKeys = []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientCapabilities, mcp.MetaKeyClientInfo}

// withoutModernMeta is params without modernMetaKeys in their _meta, every
// other byte kept; params without them are returned as they are.
func withoutModernMeta(params json.RawMessage) (json.RawMessage, error) {
	if !bytes.Contains(params, []byte(`"io.modelcontextprotocol/`)) {
		return params, nil
	}
	meta := jsonrpc.Field(params, "_meta")
	if len(meta) == 0 || meta[0] != '{' {
		return params, nil
	}
	stripped := []byte(meta)
	for _, k := range modernMetaKeys {
		var err error
		if stripped, err = jsonrpc.DeleteField(stripped, k); err != nil {
			return nil, err
		}
	}
	if len(stripped) == len(meta) {
		return params, nil
	}
	return jsonrpc.SetField(params, "_meta", stripped)
}

// ownMeta is the _meta a request with params carries on a 2026-07-28
// session: the session's, but for the capabilities of a 2026-07-28 client
// that stated its own in the request, which are kept. The server then asks
// that client (by input_required, which the hub passes through) only what
// it can answer, as a server it called directly would.
func ownMeta(meta []jsonrpc.Member, params json.RawMessage) []jsonrpc.Member {
	if !bytes.Contains(params, []byte(`"`+mcp.MetaKeyClientCapabilities+`"`)) {
		return meta
	}
	m, err := jsonrpc.ScanObject(jsonrpc.Field(params, "_meta"))
	if err != nil || m.Field(mcp.MetaKeyClientCapabilities) == nil {
		return meta
	}
	own := make([]jsonrpc.Member, 0, len(meta))
	for _, x := range meta {
		if x.Key != mcp.MetaKeyClientCapabilities {
			own = append(own, x)
		}
	}
	return own
}

// relatedCall is the request of the hub's in whose answer a remote
// server sent its request with id (a Streamable HTTP answer stream), so
// that the request goes to the client session the call is for; zero when
// it came on its own.
func (c *conn) relatedCall(id json.RawMessage) trackedCall {
	if c.http == nil {
		return trackedCall{}
	}
	ours := c.http.Related(id)
	if ours == nil {
		return trackedCall{}
	}
	c.callsMu.Lock()
	defer c.callsMu.Unlock()
	return c.calls[string(ours)]
}

// notify sends a notification to the server; it never blocks (a server
// that is behind loses notifications, counted by the connection).
func (c *conn) notify(method string, params map[string]any) error {
	var p json.RawMessage
	if len(params) > 0 {
		var err error
		if p, err = jsonrpc.Params(params); err != nil {
			return err
		}
	}
	if c.meta != nil {
		// On 2026-07-28 a notification says its version and sender in
		// _meta as a request does (see cancelParams).
		var err error
		if p, err = withMeta(p, c.meta); err != nil {
			return err
		}
	}
	if err := c.rpc.Notify(method, p); err != nil {
		return fmt.Errorf("notify %s: %w", method, err)
	}
	return nil
}

// explain turns a failed handshake with a child that died into how it
// ended, with its last stderr lines, which is what a user needs to fix it.
// It runs before close, which would stop a child still running: it waits
// a moment for one that is dying and leaves err as it is for one that is
// not.
func (c *conn) explain(err error) error {
	if c.proc == nil {
		return err
	}
	select {
	case <-c.proc.Done():
		return c.proc.ExitError()
	case <-time.After(2 * time.Second):
		return err
	}
}

// exited is closed when the session is over: the child's stdout ended (it
// exited), a remote server's stream ended or failed, or the hub gave up
// on it (lose). It is the connection's own end, so it cannot be missed.
func (c *conn) exited() <-chan struct{} { return c.rpc.Done() }

// err says how the session ended; nil while it is open. For a child that
// closed its stdout it waits a moment for the child's exit, which says
// more.
func (c *conn) err() error {
	select {
	case <-c.rpc.Done():
	default:
		return nil
	}
	c.endOnce.Do(func() {
		c.lostMu.Lock()
		lost := c.lostErr
		c.lostMu.Unlock()
		err := c.rpc.Err()
		switch {
		case lost != nil:
			err = lost
		case c.proc == nil:
			err = fmt.Errorf("connection lost: %w", err)
		case errors.Is(err, jsonrpc.ErrWriteTimeout):
			err = errors.New("stopped reading its stdin (a write timed out)")
		default:
			select {
			case <-c.proc.Done():
				err = c.proc.ExitError()
			case <-time.After(2 * time.Second):
				if errors.Is(err, io.EOF) {
					err = errors.New("closed its stdout")
				}
			}
		}
		c.endErr = err
	})
	return c.endErr
}

// expired reports whether the server ended the session (HTTP 404): the
// hub initializes again at once.
func (c *conn) expired() bool {
	c.lostMu.Lock()
	defer c.lostMu.Unlock()
	return c.lostExpired || errors.Is(c.rpc.Err(), transport.ErrSessionExpired)
}

// remote reports whether the server is reached over HTTP.
func (c *conn) remote() bool { return c.http != nil }

// lose ends a remote session after a transport failure: the stream fails
// at once (its end, and its goroutines, are waited for by close).
func (c *conn) lose(err error, expired bool) {
	c.lostMu.Lock()
	if c.lostErr == nil {
		c.lostErr, c.lostExpired = err, expired
	}
	c.lostMu.Unlock()
	if c.http != nil {
		c.http.Fail(err)
	}
}

// close ends the session: the connection first (for stdio it closes the
// child's stdin; over HTTP it ends the session with a DELETE), then the
// child by the ladder.
func (c *conn) close() {
	if c.rpc != nil {
		_ = c.rpc.Close()
	} else if c.stream != nil {
		_ = c.stream.Close()
	}
	c.endListen() // its call failed as the connection closed
	if c.proc != nil {
		if err := c.proc.Close(); err != nil {
			c.logger.Warn("stop child", "err", err)
		}
	}
}

// authFailure explains a refusal of the server to let the hub in, and
// renews an OAuth sign-in it refused; nil when err is no such refusal.
// The hub never waits for a browser: signing in is the user's
// `dynamic-mcp auth login`.
func (c *conn) authFailure(ctx context.Context, cfg *config.Server, err error) error {
	switch {
	case unauthorized(err):
		if c.auth == nil {
			return signInError{fmt.Errorf("the server requires signing in: run: %s", cfg.CLI.Command("auth", "login", cfg.ID()))}
		}
		var he *transport.HTTPError
		errors.As(err, &he)
		if merr := c.auth.Moved(ctx, he.WWWAuthenticate); merr != nil {
			return signInError{fmt.Errorf("%v: run: %s", merr, cfg.CLI.Command("auth", "login", cfg.ID()))}
		}
		if rerr := c.auth.Renew(ctx, he.Authorization); rerr != nil {
			return signInError{fmt.Errorf("the server refused the sign-in and it could not be renewed (%v): run: %s", rerr, cfg.CLI.Command("auth", "login", cfg.ID()))}
		}
		return fmt.Errorf("the server refused the token; it was renewed, and the hub connects again")
	case forbidden(err):
		hint := ""
		if insufficientScope(err) {
			hint = " insufficient_scope"
		}
		return signInError{fmt.Errorf("the server refused the token (403%s): it needs a scope the sign-in lacks; sign in again with: %s: %w", hint, cfg.CLI.Command("auth", "login", cfg.ID()), err)}
	}
	return nil
}

// status is the HTTP status a remote server refused a request with; 0
// when err is no such refusal.
func status(err error) int {
	var he *transport.HTTPError
	if errors.As(err, &he) {
		return he.Status
	}
	return 0
}

// sessionLost reports whether err, a remote call's failure, says the
// session is unusable for every call, not only this one: the request got
// no HTTP answer at all (the server not reached: refused, reset, DNS, TLS,
// a redirect loop), or one that refuses the session: a token refused
// (401, 403), so that the next session signs in or fails for all, or a
// server that is not there (502, 503, 504: an outage behind a proxy). A 404
// on the session ends the stream by itself (transport.ErrSessionExpired).
// Anything else is that call's alone, and its other calls go on: an HTTP
// error for it (a tool that crashed into a 500, a 400 for its arguments),
// an answer stream that ended or broke off before the answer and could
// not be resumed, an answer of the wrong kind, a JSON body that is not the
// call's answer (transport.ErrNotAnswer).
func sessionLost(err error) bool {
	var ue *url.Error
	if errors.As(err, &ue) {
		return true
	}
	switch status(err) {
	case http.StatusUnauthorized, http.StatusForbidden,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// unauthorized reports whether err is a server's 401.
func unauthorized(err error) bool { return status(err) == http.StatusUnauthorized }

// refusedAuthorization is the Authorization header of the request a
// server refused with err; "" when err is no HTTP refusal.
func refusedAuthorization(err error) string {
	var he *transport.HTTPError
	if errors.As(err, &he) {
		return he.Authorization
	}
	return ""
}

// forbidden reports whether err is a server's 403.
func forbidden(err error) bool { return status(err) == http.StatusForbidden }

// insufficientScope reports whether err is a 403 whose challenge says the
// token lacks a scope (RFC 6750 section 3.1).
func insufficientScope(err error) bool {
	var he *transport.HTTPError
	return errors.As(err, &he) && he.Status == http.StatusForbidden && strings.Contains(he.WWWAuthenticate+he.Body, "insufficient_scope")
}

// challenge is the WWW-Authenticate of the HTTP refusal err; "" when err
// is none.
func challenge(err error) string {
	var he *transport.HTTPError
	if errors.As(err, &he) {
		return he.WWWAuthenticate
	}
	return ""
}

// stepUp keeps the scopes a call refused with challenge (403
// insufficient_scope) needs where the next sign-in finds them
// (auth.Source.StepUp), and says what they are: a user who signs in again
// is not refused again for asking the same scope as before.
func (c *conn) stepUp(ctx context.Context, challenge string) string {
	want, err := c.auth.StepUp(ctx, challenge)
	switch {
	case want == nil:
		return fmt.Sprintf("it needs a scope the sign-in lacks (%v)", err)
	case err != nil:
		c.logger.Warn("keep the scopes to sign in with", "err", err)
	}
	return "it needs scope " + strings.Join(want, " ")
}

// ScopeError is a call the server refused with 403 insufficient_scope.
// Challenge, the refusal's WWW-Authenticate, names the scopes a new
// sign-in must add (auth.StepUpScopes). It keeps the HTTP refusal out of
// the error's chain: a call refused for want of a scope is that call's
// alone, and the session goes on for the others (sessionLost).
type ScopeError struct {
	Challenge string
	err       error
}

func (e *ScopeError) Error() string { return e.err.Error() }
func (e *ScopeError) Unwrap() error { return e.err }

// legacySSE reports whether err, of a Streamable HTTP handshake, says the
// server is a legacy SSE one: its initialize POST refused with a 4xx
// other than 401 (2025-11-25, basic/transports, "Backwards
// Compatibility").
func legacySSE(err error) bool {
	s := status(err)
	return s >= 400 && s < 500 && s != http.StatusUnauthorized
}

// errUnavailable is wrapped by every error for a server that is not ready.
var errUnavailable = errors.New("unavailable")

// connectTimeout is the error of a try that got no answer to initialize
// within its connect timeout.
type connectTimeout struct {
	cfg    *config.Server
	within time.Duration // the try's connect timeout
	// next is the next try's, once the server's schedule has set it (see
	// schedule.timedOut); 0 when unknown.
	next time.Duration
	// again says when the next try is, for a session's own connection
	// (isolation: per-session) or a user's (auth: per-user): a call dials
	// it, see dialFailedLocked; "" for the shared one, which the hub dials
	// again on its own.
	again string
}

// connectTimeoutError says that cfg did not answer initialize within d.
// A package runner's first start downloads the package first: the error
// says so, when the hub tries again, and what waits longer.
func connectTimeoutError(cfg *config.Server, d time.Duration) error {
	return &connectTimeout{cfg: cfg, within: d}
}

func (e *connectTimeout) Error() string {
	runner := e.cfg.PackageRunner()
	again := "the hub tries again on its own"
	if e.again != "" {
		again = e.again
	}
	if e.next > 0 {
		again += fmt.Sprintf("; the next try gets %s to start", e.next) // its connect timeout, not the backoff
	}
	switch {
	case runner == "" && e.next > 0:
		return fmt.Sprintf("no answer to initialize within %s (connect timeout); the next try waits %s", e.within, e.next)
	case runner == "":
		return fmt.Sprintf("no answer to initialize within %s (connect timeout)", e.within)
	case e.cfg.ConnectTimeout != 0:
		return fmt.Sprintf("no answer to initialize within %s (connect timeout): %s may still be downloading the package on its first start; %s (to wait longer, raise the server's timeout: or settings.connect_timeout)", e.within, runner, again)
	default:
		return fmt.Sprintf("no answer to initialize within %s (connect timeout): %s may still be downloading the package on its first start; %s (to wait longer, raise settings.connect_timeout)", e.within, runner, again)
	}
}
