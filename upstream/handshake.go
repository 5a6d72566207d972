package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// discoverProbe bounds the wait for server/discover, the first thing a
// server is asked: a server of a version before 2026-07-28 answers
// "method not found", but some ignore a method they do not know. Past it
// the server is sent initialize instead (a stdio server once it has read
// the discover: see discoverFirst); a late answer to a probe given up is
// logged at debug (see conn.refused). A variable for the tests.
var discoverProbe = 5 * time.Second

// handshake settles the protocol version with the server and learns its
// capabilities. A server is asked server/discover first, as 2026-07-28
// does (SEP-2575), and gets initialize when it does not answer it; a
// legacy SSE server (a transport of 2024-11-05) gets initialize only, and
// a remote server that offers an older version beside 2026-07-28 gets
// initialize too (see offersLegacy).
//
// A 2026-07-28 server asks the client things with input_required results
// (SEP-2322), which the hub passes to its client or answers through it
// (see server/rounds); over HTTP its requests carry the
// standard headers (Mcp-Method, Mcp-Name, Mcp-Param-*: see transport).
func (c *conn) handshake(ctx context.Context, caps mcp.ClientCapabilities) error {
	if c.sse {
		return c.initialize(ctx, caps)
	}
	return c.discoverFirst(ctx, caps)
}

// discoverFirst asks server/discover, then initialize when the server does
// not answer it within the probe. A stdio server slow to start (npx
// fetching its package, a loaded machine) reads what the hub wrote
// meanwhile in order, once it runs: a 2026-07-28 server would answer a
// server/discover whose probe had passed and take the initialize sent
// since for a second handshake (go-sdk's answers `duplicate "initialize"
// received`). So the probe runs from when the server is first seen to
// have read the discover (Process.Unread, looked at 20 times a probe);
// from the start where that cannot be seen: a remote server, an OS that
// does not tell, or a wrapper such as `docker run -i` that reads for a
// child still starting. ctx, the connect timeout, bounds how long the
// server may take to start, and the probe to half of what is left of it.
//
// A stdio server's discover stays asked while initialize goes, so that a
// 2026-07-28 server that answers it late (after a probe cut short by the
// connect timeout) still gets its session, and its refusal of the
// initialize is not the end: a discover answered by the time initialize
// is settles the session. Over HTTP the discover is given up first: its
// version header must not go with the initialize.
func (c *conn) discoverFirst(ctx context.Context, caps mcp.ClientCapabilities) error {
	dctx, cancelDiscover := context.WithCancel(ctx)
	defer cancelDiscover()
	dch := make(chan discovered, 1)
	go func(ch chan<- discovered) {
		s, done, err := c.discover(dctx, caps)
		ch <- discovered{s, done, err}
	}(dch)
	look := time.NewTicker(max(discoverProbe/20, time.Millisecond))
	defer look.Stop()
	ictx, cancelInitialize := context.WithCancel(ctx)
	defer cancelInitialize()
	var ich chan initialized // made when initialize is sent, nil again once answered
	sent := false
	sendInitialize := func() {
		look.Stop()
		sent, ich = true, make(chan initialized, 1)
		go func(ch chan<- initialized) {
			init, err := c.askInitialize(ictx, caps)
			ch <- initialized{init, err}
		}(ich)
	}
	start := time.Now()
	var readAt time.Time // when the server was seen to have read all the hub wrote; zero while not
	said := false
	var initErr error          // initialize's refusal, while the discover may still be answered
	var grace <-chan time.Time // how long a discover answer read before that refusal may take to come
	for {
		select {
		case <-look.C:
			now := time.Now()
			n, ok := c.proc.Unread()
			switch {
			case !ok:
				readAt = start
			case n > 0:
				readAt = time.Time{}
				if !said && now.Sub(start) >= discoverProbe {
					said = true
					c.logger.Debug("the server has not read server/discover yet: still starting", "unread", n)
				}
				continue
			case readAt.IsZero():
				readAt = now
			}
			// Half of what is left of the connect timeout at most, so
			// that a server that ignores the discover gets initialize in
			// time when that timeout is short.
			probe := discoverProbe
			if dl, ok := ctx.Deadline(); ok {
				probe = min(probe, dl.Sub(readAt)/2)
			}
			if now.Sub(readAt) < probe {
				continue
			}
			if c.http != nil {
				// Given up (the server is told); initialize goes once the
				// discover has returned, its version header gone.
				look.Stop()
				cancelDiscover()
				continue
			}
			sendInitialize()
		case d := <-dch:
			dch = nil
			switch {
			case d.done:
				c.settle(d.s)
				return d.err
			case !sent:
				if err := ctx.Err(); err != nil {
					return err
				}
				sendInitialize()
			case initErr != nil:
				return initErr
			}
		case i := <-ich:
			ich = nil
			if i.err != nil && dch != nil {
				// A server that read in order answered the discover, if
				// at all, before it refused the initialize: that answer
				// may still be on its way to this loop.
				initErr, grace = i.err, time.After(time.Second)
				continue
			}
			if i.err != nil {
				return i.err
			}
			if dch != nil {
				// The discover is given up (the server is told before it
				// hears notifications/initialized), unless it was
				// answered meanwhile: then it settles the session.
				cancelDiscover()
				if d := <-dch; d.done && d.err == nil {
					c.settle(d.s)
					return nil
				}
			}
			return c.takeInitialize(i.init)
		case <-grace:
			return initErr
		}
	}
}

// discovered is what discover ended with, initialized what askInitialize
// did.
type (
	discovered struct {
		s    *session
		done bool
		err  error
	}
	initialized struct {
		init *mcp.InitializeResult
		err  error
	}
)

// session is what server/discover settled: a 2026-07-28 session.
type session struct {
	version string
	meta    []jsonrpc.Member
	init    *mcp.InitializeResult
}

// settle takes s (when not nil) as the connection's session.
func (c *conn) settle(s *session) {
	if s == nil {
		return
	}
	c.version, c.meta, c.init = s.version, s.meta, s.init
	c.setVersion()
}

// discover tries a 2026-07-28 session: done when the server answered
// server/discover, with the session it settled unless err. A server that
// names the versions it supports is asked once more in the newest of
// them the hub knows.
func (c *conn) discover(ctx context.Context, caps mcp.ClientCapabilities) (s *session, done bool, err error) {
	version := mcp.LATEST_PROTOCOL_VERSION
	for range 2 {
		meta, err := requestMeta(version, caps)
		if err != nil {
			return nil, false, err
		}
		params, err := withMeta(nil, meta)
		if err != nil {
			return nil, false, err
		}
		if c.http != nil {
			// Over HTTP the version is in a header too, which must agree
			// with _meta; initialize, if it comes to that, goes without.
			c.http.SetProtocolVersion(version)
			defer func() {
				if !done {
					c.http.SetProtocolVersion("")
				}
			}()
		}
		res, err := c.rpc.Call(ctx, string(mcp.MethodServerDiscover), params)
		if err == nil && jsonrpc.Field(res, "supportedVersions") == nil && jsonrpc.Field(res, "capabilities") == nil {
			// An answer that says nothing of a session (a lax server's {}
			// to any method, as the conformance suite's test servers give)
			// is not a 2026-07-28 server's: initialize.
			return nil, false, nil
		}
		if err == nil {
			var d mcp.DiscoverResult
			if err := json.Unmarshal(res, &d); err != nil {
				return nil, true, fmt.Errorf("server/discover: %w", err)
			}
			if c.http != nil && offersLegacy(d.SupportedVersions) {
				return nil, false, nil // initialize, in the newest version before 2026-07-28
			}
			if len(d.SupportedVersions) > 0 && !slices.Contains(d.SupportedVersions, version) {
				// The server answered in a session of a version it does
				// not name: initialize when an older one is in common (or
				// ask again in a modern one other than the one asked: none
				// the hub knows yet).
				next := mcp.NegotiateMutuallySupportedVersion(d.SupportedVersions)
				switch {
				case next == "":
					return nil, true, fmt.Errorf("server/discover: no protocol version in common: the server supports %s, the hub %q", clip.EchoText(fmt.Sprintf("%q", d.SupportedVersions)), mcp.ValidProtocolVersions)
				case !mcp.IsModernProtocol(next):
					return nil, false, nil
				}
				version = next
				continue
			}
			s := &session{version: version, meta: meta,
				init: &mcp.InitializeResult{ProtocolVersion: version, Capabilities: d.Capabilities, Instructions: boundInstructions(d.Instructions)}}
			if info := d.GetResultMeta().ServerInfo(); info != nil {
				s.init.ServerInfo = *info
			}
			return s, true, nil
		}
		var rpcErr *RPCError
		if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.UNSUPPORTED_PROTOCOL_VERSION {
			return nil, false, err
		}
		var data mcp.UnsupportedProtocolVersionData
		if b, err := json.Marshal(rpcErr.Data); err == nil {
			_ = json.Unmarshal(b, &data)
		}
		next := mcp.NegotiateMutuallySupportedVersion(data.Supported)
		if next == "" || !mcp.IsModernProtocol(next) || next == version {
			return nil, false, err
		}
		version = next
	}
	return nil, false, nil
}

// MaxInstructions bounds the instructions kept of a server: text from
// outside, held for as long as the connection lasts and handed to every
// client (STYLE 15). Real servers write a few kilobytes at most.
const MaxInstructions = 16 << 10

// boundInstructions is s cut to MaxInstructions bytes, with a mark that
// says so; a copy when cut, so that it holds nothing of the message.
func boundInstructions(s string) string {
	return clip.Marked(s, MaxInstructions, "\n… (cut by dynamic-mcp: the server's instructions are longer than 16 KiB)")
}

// offersLegacy reports whether a server's supported versions include one
// before 2026-07-28 that the hub speaks. A remote server that offers both
// is spoken to in the older one: there it may send requests (sampling,
// elicitation, roots) during a call, which the hub passes to clients of
// either version (a 2026-07-28 client gets them as input_required
// rounds), and it sends notifications on its GET stream, where on
// 2026-07-28 many servers refuse requests of their own (mcp-go v1.2.1's
// do, unless written for input_required) and notifications, resource
// subscriptions and logging/setLevel need subscriptions/listen and
// per-request _meta, which the hub does not send upstream yet. A server
// that offers 2026-07-28 alone gets it.
func offersLegacy(supported []string) bool {
	for _, v := range supported {
		if !mcp.IsModernProtocol(v) && mcp.IsValidProtocolVersion(v) {
			return true
		}
	}
	return false
}

// initialize runs the handshake of the versions before 2026-07-28:
// initialize in the newest of them, then notifications/initialized.
func (c *conn) initialize(ctx context.Context, caps mcp.ClientCapabilities) error {
	init, err := c.askInitialize(ctx, caps)
	if err != nil {
		return err
	}
	return c.takeInitialize(init)
}

// askInitialize sends initialize and checks its result.
func (c *conn) askInitialize(ctx context.Context, caps mcp.ClientCapabilities) (*mcp.InitializeResult, error) {
	params, err := jsonrpc.Marshal(struct {
		ProtocolVersion string                 `json:"protocolVersion"`
		ClientInfo      mcp.Implementation     `json:"clientInfo"`
		Capabilities    mcp.ClientCapabilities `json:"capabilities"`
	}{mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo, caps})
	if err != nil {
		return nil, err
	}
	res, err := c.rpc.Call(ctx, string(mcp.MethodInitialize), params)
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	var init mcp.InitializeResult
	if err := json.Unmarshal(res, &init); err != nil {
		return nil, fmt.Errorf("initialize: the result: %w", err)
	}
	if !mcp.IsValidProtocolVersion(init.ProtocolVersion) {
		return nil, fmt.Errorf("initialize: %w", mcp.UnsupportedProtocolVersionError{Version: init.ProtocolVersion})
	}
	init.Instructions = boundInstructions(init.Instructions)
	return &init, nil
}

// takeInitialize takes init as the connection's session and tells the
// server with notifications/initialized.
func (c *conn) takeInitialize(init *mcp.InitializeResult) error {
	c.init, c.version = init, init.ProtocolVersion
	c.setVersion()
	if err := c.rpc.Notify(string(mcp.MethodNotificationInitialized), nil); err != nil {
		return fmt.Errorf("notifications/initialized: %w", err)
	}
	return nil
}

// setVersion gives a remote server's stream the negotiated version, which
// its requests carry in a header from now on.
func (c *conn) setVersion() {
	if c.http != nil {
		c.http.SetProtocolVersion(c.version)
	}
}

// requestMeta is the _meta every request of a 2026-07-28 session carries:
// the version, the hub's capabilities and who it is.
func requestMeta(version string, caps mcp.ClientCapabilities) ([]jsonrpc.Member, error) {
	members := []jsonrpc.Member{{Key: mcp.MetaKeyProtocolVersion}, {Key: mcp.MetaKeyClientCapabilities}, {Key: mcp.MetaKeyClientInfo}}
	for i, v := range []any{version, caps, ClientInfo} {
		b, err := jsonrpc.Marshal(v)
		if err != nil {
			return nil, err
		}
		members[i].Value = b
	}
	return members, nil
}

// cancelParams is the params of the notifications/cancelled for a call
// whose params were call, from those the Conn made (cancel): on a
// 2026-07-28 session every message says its version and who sent it in
// _meta, and over HTTP the server checks that _meta against the
// MCP-Protocol-Version header (basic/transports/streamable-http, "Protocol
// Version Header"), so the cancel carries the call's own (the conformance
// suite's server refuses one without). A call of an older session has
// none, and its cancel goes as made.
func cancelParams(call, cancel json.RawMessage) json.RawMessage {
	if !bytes.Contains(call, []byte(`"io.modelcontextprotocol/`)) {
		return cancel
	}
	meta, err := jsonrpc.ScanObject(jsonrpc.Field(call, "_meta"))
	if err != nil {
		return cancel
	}
	var members []jsonrpc.Member
	for _, k := range modernMetaKeys {
		if v := meta.Field(k); v != nil {
			members = append(members, jsonrpc.Member{Key: k, Value: v})
		}
	}
	if len(members) == 0 {
		return cancel
	}
	if p, err := withMeta(cancel, members); err == nil {
		return p
	}
	return cancel
}
