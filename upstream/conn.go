package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
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

// firstRequestID keeps the hub's raw requests clear of the ids mcp-go's
// client uses for initialize and ping, which count up from 1.
const firstRequestID = 1 << 30

// conn is one live session with an upstream: mcp-go's client for the
// handshake, its transport for raw requests, and the child if there is one.
type conn struct {
	client *client.Client
	tr     mcptransport.Interface
	proc   *transport.Process // nil for remote servers
	stdio  *transport.Stdio   // nil for remote servers
	auth   *auth.Source       // an OAuth sign-in; nil when the server has none
	nextID atomic.Int64
	init   *mcp.InitializeResult
	meta   map[string]any // _meta every request carries on a 2026-07-28 session
	logger *slog.Logger

	// A remote server has no process to watch: a transport failure marks
	// the session lost instead.
	lost     chan struct{}
	lostOnce sync.Once
	lostErr  error
	expired  bool // lost because the server ended the session (HTTP 404)
}

// dial starts the server and runs the MCP handshake, bounded by the connect
// timeout. ctx is the connection's lifetime. onNotify hears the server's
// notifications: on stdio with their params byte for byte, over HTTP as
// mcp-go decoded them.
func dial(ctx context.Context, cfg *config.Server, settings config.ServerSettings, caps mcp.ClientCapabilities, tokens *auth.Store, logger *slog.Logger,
	onNotify func(method string, params json.RawMessage), onRequest mcptransport.RequestHandler) (*conn, error) {
	c := &conn{logger: logger, lost: make(chan struct{})}
	c.nextID.Store(firstRequestID)
	switch cfg.Transport {
	case config.TransportStdio:
		proc, err := transport.StartProcess(transport.ProcessSpec{
			Command: cfg.Command, Args: cfg.Args, Env: cfg.Env, Hide: cfg.Hide, Dir: cfg.Cwd, Grace: settings.StopGrace,
		}, logger)
		if err != nil {
			return nil, err
		}
		c.proc = proc
		c.stdio = transport.NewStdio(proc, settings.MaxMessageSize, logger)
		c.stdio.SetRawNotificationHandler(onNotify) // params pass through unchanged
		c.tr = c.stdio
	default:
		var authorization func(context.Context) (string, error)
		if tokens != nil {
			src, err := auth.NewSource(tokens, cfg.ID(), cfg.URL)
			switch {
			case err == nil:
				c.auth, authorization = src, src.Header
			case !errors.Is(err, auth.ErrNoToken):
				return nil, err
			}
		}
		tr, err := transport.NewHTTP(cfg, settings, authorization, logger)
		if err != nil {
			return nil, err
		}
		c.tr = tr
	}
	c.client = client.NewClient(c.tr)
	if err := c.client.Start(ctx); err != nil {
		err = c.explain(fmt.Errorf("start: %w", err))
		c.close()
		return nil, err
	}
	c.client.OnNotification(func(n mcp.JSONRPCNotification) { onNotify(n.Method, notificationParams(n)) })
	if c.stdio == nil {
		// A remote stream that breaks (a legacy SSE stream cut off, or over
		// the size limit) ends the session at once, not at the next call's
		// timeout.
		c.client.OnConnectionLost(func(err error) { c.lose(fmt.Errorf("connection lost: %w", err), false) })
	}
	// Requests from the server are answered raw, by the hub, not by
	// mcp-go's typed handlers.
	if bi, ok := c.tr.(mcptransport.BidirectionalInterface); ok {
		bi.SetRequestHandler(onRequest)
	}
	hctx, cancel := context.WithTimeout(ctx, settings.ConnectTimeout)
	defer cancel()
	init, err := c.client.Initialize(hctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: ClientInfo, Capabilities: caps}})
	if err != nil {
		if hctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("no answer to initialize within %s (connect timeout)", settings.ConnectTimeout)
		} else {
			err = c.explain(err)
		}
		c.close()
		if authErr := c.authFailure(ctx, cfg, err); authErr != nil {
			return nil, authErr
		}
		return nil, err
	}
	c.init = init
	if mcp.IsModernProtocol(c.client.ProtocolVersion()) {
		c.meta = map[string]any{
			mcp.MetaKeyProtocolVersion:    c.client.ProtocolVersion(),
			mcp.MetaKeyClientCapabilities: caps,
			mcp.MetaKeyClientInfo:         ClientInfo,
		}
	}
	return c, nil
}

// request sends one raw JSON-RPC request and returns the raw result. An
// error the server answered with is an *RPCError. When ctx ends first the
// server is told with notifications/cancelled and a late reply is dropped
// by the transport, never handed to another request.
func (c *conn) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if c.meta != nil {
		params = withMeta(params, c.meta)
	}
	id := mcp.NewRequestId(c.nextID.Add(1))
	req := mcptransport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Method: method, Params: params}
	if c.meta != nil && c.stdio == nil {
		// 2026-07-28 over HTTP mirrors the method and name in headers.
		if b, err := json.Marshal(params); err == nil {
			req.Header = http.Header{}
			for k, v := range mcp.StandardHeaders(c.client.ProtocolVersion(), mcp.MCPMethod(method), b) {
				req.Header.Set(k, v)
			}
		}
	}
	resp, err := c.tr.SendRequest(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			if c.stdio == nil { // over stdio the connection tells the server itself
				c.cancel(id, ctx.Err())
			}
			return nil, ctx.Err()
		}
		return nil, err
	}
	if resp.Error != nil {
		return nil, &RPCError{Code: resp.Error.Code, Message: resp.Error.Message, Data: resp.Error.Data}
	}
	return resp.Result, nil
}

// notify sends a notification to the server.
func (c *conn) notify(ctx context.Context, method string, params map[string]any) error {
	return c.tr.SendNotification(ctx, mcp.JSONRPCNotification{
		JSONRPC:      mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{Method: method, Params: mcp.NotificationParams{AdditionalFields: params}},
	})
}

func (c *conn) cancel(id mcp.RequestId, reason error) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = c.notify(ctx, "notifications/cancelled", map[string]any{"requestId": id, "reason": reason.Error()})
	}()
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
// exited), or a remote server's transport failed.
func (c *conn) exited() <-chan struct{} {
	if c.stdio == nil {
		return c.lost
	}
	return c.stdio.Done()
}

// err says how the session ended.
func (c *conn) err() error {
	if c.stdio != nil {
		return c.stdio.Err()
	}
	return c.lostErr
}

// lose marks a remote session as over after a transport failure.
func (c *conn) lose(err error, expired bool) {
	c.lostOnce.Do(func() {
		c.lostErr, c.expired = err, expired
		close(c.lost)
	})
}

// close ends the session: the transport first (for stdio it closes the
// child's stdin), then the child by the ladder.
func (c *conn) close() {
	if c.client != nil {
		_ = c.client.Close()
	} else if c.tr != nil {
		_ = c.tr.Close()
	}
	if c.proc != nil {
		if err := c.proc.Close(); err != nil {
			c.logger.Warn("stop child", "err", err)
		}
		<-c.stdio.Done()
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
			return fmt.Errorf("the server requires signing in: run: dynamic-mcp auth login %s", cfg.ID())
		}
		if rerr := c.auth.Renew(ctx); rerr != nil {
			return fmt.Errorf("the server refused the sign-in and it could not be renewed (%v): run: dynamic-mcp auth login %s", rerr, cfg.ID())
		}
		return fmt.Errorf("the server refused the token; it was renewed, and the hub connects again")
	case httpStatus.FindStringSubmatch(err.Error()) != nil && httpStatus.FindStringSubmatch(err.Error())[1] == "403":
		hint := ""
		if strings.Contains(err.Error(), "insufficient_scope") {
			hint = " insufficient_scope"
		}
		return fmt.Errorf("the server refused the token (403%s): it needs a scope the sign-in lacks; sign in again with: dynamic-mcp auth login %s", hint, cfg.ID())
	}
	return nil
}

// httpStatus finds the status in mcp-go's HTTP transport errors.
var httpStatus = regexp.MustCompile(`status(?: code)?:? (\d{3})\b`)

// unauthorized reports whether err is a server's 401.
func unauthorized(err error) bool {
	var ae *mcptransport.AuthorizationRequiredError
	if errors.As(err, &ae) || errors.Is(err, mcptransport.ErrUnauthorized) {
		return true
	}
	m := httpStatus.FindStringSubmatch(err.Error())
	return m != nil && m[1] == "401"
}

// withMeta adds the 2026-07-28 per-request _meta to params.
func withMeta(params any, meta map[string]any) any {
	fields := map[string]json.RawMessage{}
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil || json.Unmarshal(b, &fields) != nil {
			return params
		}
	}
	merged := map[string]any{}
	if raw, ok := fields["_meta"]; ok {
		_ = json.Unmarshal(raw, &merged)
	}
	for k, v := range meta {
		merged[k] = v
	}
	b, _ := json.Marshal(merged)
	fields["_meta"] = b
	return fields
}

// errUnavailable is wrapped by every error for a server that is not ready.
var errUnavailable = errors.New("unavailable")
