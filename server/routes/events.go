package routes

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Notification routes a notification from an upstream server to the
// clients it is for. Its params pass through byte for byte but for the
// member the hub must change (the progress token, the logger's name) and
// a secret's value.
// It runs on the hub's event loop: Session.Notify never blocks.
func (t *Table[S]) Notification(e upstream.Event) {
	ctx, s, method, params := e.Context, e.Server, e.Method, e.Params
	var zero S
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	// A resolved ${secret:NAME} a server logs or reports (a log message,
	// a progress message) goes no further, as in its answers (server/observe).
	params = t.opts.Redact(params)
	// Checked JSON since it arrived (its connection decoded it): scanned
	// once, its members read and replaced without validating it again.
	fields, _ := jsonrpc.ScanObject(params) // the zero Object when no object: With refuses it
	var (
		tok   string
		route progressRoute[S]
		known bool // a progress notification for a call in flight
		kept  bool // one of a held call between its rounds (HoldProgress)
	)
	if method == "notifications/progress" {
		tok, route, known, kept = t.progressOf(e, fields)
	}
	if obs := t.opts.Observer(); obs != nil {
		m := &traffic.Message{Direction: traffic.FromUpstream, Server: s.Config.ID(), Method: method, Params: params}
		octx, osess := ctx, t.For(e.Owner)
		if known {
			// Under its call even where the transport cannot tell which
			// call a notification came during (stdio).
			octx, osess = route.ctx, route.sess
		}
		if osess != zero {
			m.Session = osess.ID()
		}
		obs.Message(octx, m)
	}
	logger := t.opts.Logger
	switch method {
	case "notifications/progress":
		if kept {
			logger.Debug("progress of a held call kept for its next round", "upstream", s.Config.ID(), "token", tok)
			return
		}
		if !known {
			logger.Debug("progress for no call in flight", "upstream", s.Config.ID(), "token", tok)
			return
		}
		p, err := fields.With(jsonrpc.Member{Key: "progressToken", Value: route.token})
		if err != nil {
			logger.Debug("progress with params that are no object", "upstream", s.Config.ID(), "err", err)
			return
		}
		notify(route.ctx, route.sess, method, p)
	case "notifications/message":
		var level mcp.LoggingLevel
		_ = json.Unmarshal(fields.Field("level"), &level)
		name := s.Config.ID()
		if l := stringOf(fields.Field("logger")); l != "" {
			name += "/" + l
		}
		quoted, _ := jsonrpc.Marshal(name)
		p, err := fields.With(jsonrpc.Member{Key: "logger", Value: quoted})
		if err != nil {
			logger.Debug("log message with params that are no object", "upstream", s.Config.ID(), "err", err)
			return
		}
		// Every session gets one from a shared connection; the session whose call it came during
		// (the only one with calls in flight on its connection, see
		// upstream's callContext) gets it under that call, so that over
		// HTTP it travels on the call's stream, before the answer, as
		// from the server itself.
		// One that came on a session's own connection (isolation:
		// per-session) is that session's alone, one on a user's own
		// connection (auth: per-user) that user's sessions' (see hears).
		for _, sess := range t.List() {
			if !hears(e, sess) {
				continue
			}
			if Allows(sess.GetLogLevel(), level) {
				nctx := context.Background()
				if e.Owner == upstream.Owner(sess) {
					nctx = ctx
				}
				notify(nctx, sess, method, p)
			}
		}
	case "notifications/tasks/status":
		if owner, p, ok := t.opts.TaskStatus(ctx, s, params); ok {
			notify(context.Background(), owner, method, p)
		}
	case "notifications/resources/updated":
		uri := stringOf(fields.Field("uri"))
		if t.opts.HidesResource(uri) {
			logger.Debug("update of a hidden resource not passed on", "upstream", s.Config.ID(), "uri", uri)
			return
		}
		t.mu.Lock()
		var subs []S
		if sub := t.subs[uri]; sub != nil && sub.owner.Config.ID() == s.Config.ID() {
			for sess := range sub.sessions {
				if hears(e, sess) { // an update on a connection of one's own is no one else's
					subs = append(subs, sess)
				}
			}
		}
		t.mu.Unlock()
		for _, sess := range subs {
			if !sess.Modern() {
				notify(context.Background(), sess, method, params)
			}
			sess.Updated(uri, params)
		}
	default:
		logger.Debug("upstream notification not passed on", "upstream", s.Config.ID(), "method", method)
	}
}

// hears reports whether sess may be told what came in e: what came on a
// connection of one session's own (isolation: per-session) is that
// session's alone (its owner, e.Owner, is that session itself), what
// came on a user's own connection (auth: per-user) is for that user's
// sessions alone; what came on a shared connection is anyone's.
func hears[S Keyed](e upstream.Event, sess S) bool {
	return (!e.OwnConn || e.Owner == upstream.Owner(sess)) && (e.User == "" || sess.UserKey() == e.User)
}

// ofSession reports whether e came for a client session (its owner is
// one: upstream.Owner.SessionID), not for a held call, a user's own
// connection or no one.
func ofSession(e upstream.Event) bool { return e.Owner != nil && e.Owner.SessionID() != "" }

// ServerRequest is a request of an upstream server's to a client, as the
// table passes it on (Request): one that came in an upstream.Event
// (RequestOf), or one a stage puts to the client for the server it sends
// a call to (a 2026-07-28 round's input request, a per-user sign-in).
type ServerRequest struct {
	Server call.Upstream  // the server that asks
	Owner  upstream.Owner // whose call it came during (upstream.Event.Owner), nil for none known
	Part   uint64         // the part of the owner's work it came during (upstream.Event.Part)
	Method string
	Params json.RawMessage // nil when the server sent none
	// Ambiguous: it came while calls of several owners were in flight
	// (upstream.Event.Ambiguous).
	Ambiguous bool
}

// RequestOf is the request upstream's event e carries.
func RequestOf(e upstream.Event) ServerRequest {
	return ServerRequest{Server: e.Server, Owner: e.Owner, Part: e.Part, Method: e.Method, Params: e.Params, Ambiguous: e.Ambiguous}
}

// Request passes a request from an upstream server (sampling,
// elicitation, roots) to the client whose call caused it (e.Owner), where
// that client declared it can answer, and returns the client's answer.
// ctx carries the upstream's deadline; params are nil when the upstream
// sent none, and then the client gets none either (never "params": null).
func (t *Table[S]) Request(ctx context.Context, e ServerRequest) (res json.RawMessage, err error) {
	s, method, params := e.Server.ServerConfig(), e.Method, e.Params
	// A resolved ${secret:NAME} a server asks the client about (a sampling
	// prompt, an elicitation's message) goes no further, as in its
	// answers (server/observe) and notifications.
	if params != nil {
		params = t.opts.Redact(params)
	}
	var zero S
	sess, several := t.pick(e.Owner)
	noClient := false // the hub answers for the client (see traffic.StatusNoClient)
	if obs := t.opts.Observer(); obs != nil {
		m := &traffic.Message{Direction: traffic.FromUpstream, Server: s.ID(), Method: method, Params: params, Request: true}
		if sess != zero {
			m.Session = sess.ID()
		}
		start := time.Now()
		defer func() {
			m.Result, m.Err, m.Duration, m.NoClient = res, err, time.Since(start), noClient
			obs.Message(ctx, m)
		}()
	}
	// During a 2026-07-28 client's call: asked in its next round.
	if res, ok, err := t.opts.Ask(ctx, e, params); ok {
		return res, err
	}
	if e.Ambiguous {
		t.opts.Logger.Warn("upstream request passed to no client: calls of several clients are in flight to it", "upstream", s.ID(), "method", method)
		return nil, &upstream.RPCError{Code: jsonrpc.CodeInvalidRequest, Message: "dynamic-mcp: calls of several clients are in flight to this server, and " + method + " does not say which it belongs to; it is passed to none of them"}
	}
	if sess == zero && several {
		// No call it came during is known (none in flight), and no one
		// session is the only one it could be for: the sessions of a
		// user that share the user's own connection (auth: per-user),
		// those of a shared one. As for Ambiguous, none is guessed; as
		// with no session at all, it is no failure (a roots/list as the
		// server starts, say).
		noClient = true
		t.opts.Logger.Debug("upstream request passed to no client: it came during no call, and several client sessions could answer it", "upstream", s.ID(), "method", method)
		return nil, &upstream.RPCError{Code: jsonrpc.CodeInvalidRequest, Message: "dynamic-mcp: " + method + " came during no call of a client's, and several client sessions could answer it; it is passed to none of them"}
	}
	if sess == zero {
		noClient = true
		return nil, &upstream.RPCError{Code: jsonrpc.CodeInvalidRequest, Message: "dynamic-mcp: no client session to pass " + method + " to"}
	}
	caps := sess.GetClientCapabilities()
	var able bool
	what := method
	switch method {
	case "sampling/createMessage":
		able = caps.Sampling != nil
	case "elicitation/create":
		mode := ElicitationMode(params)
		able = CanElicit(caps.Elicitation, mode)
		if mode == "url" {
			what += " in URL mode"
		}
	case "roots/list":
		able = caps.Roots != nil
	}
	if !able {
		noClient = true
		return nil, &upstream.RPCError{Code: jsonrpc.CodeMethodNotFound, Message: "dynamic-mcp: the client does not support " + what}
	}
	return sess.Request(ctx, method, params) // a client's error is already the upstream's RPCError type
}

// CanElicit reports whether a client that declared e can answer an
// elicitation in mode ("" is form). What the upstream was told may not
// be what this client states (a shared connection declares for every
// client, and a 2026-07-28 client states its capabilities anew in each
// request); a client that declared elicitation without naming a mode
// answers forms only (basic/elicitation, "Capabilities").
func CanElicit(e *mcp.ElicitationCapability, mode string) bool {
	switch {
	case e == nil:
		return false
	case mode == "url":
		return e.URL != nil
	}
	return e.Form != nil || e.URL == nil
}

// ElicitationMode is the mode an elicitation/create asks in, "" when it
// names none (form).
func ElicitationMode(params json.RawMessage) string {
	p, err := jsonrpc.ScanObject(params)
	if err != nil {
		return ""
	}
	return stringOf(p.Field("mode"))
}

// stringOf decodes a raw JSON string, "" for any other value.
func stringOf(raw []byte) string {
	var s string
	if len(raw) > 0 && raw[0] == '"' {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}
