package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// On 2026-07-28 a server sends notifications only on a
// subscriptions/listen the client opens, and has no resources/subscribe
// (SEP-2575): the hub keeps one listen open on each such session, for the
// list_changed of every list the server declares listChanged of and the
// resources/updated of every URI the hub subscribes to there, so that
// what the server says reaches the hub as an older session's
// notifications do (the Events of the server). The notifications come as
// any other the server sends, with the listen's id in their _meta, which
// the hub does not read. A change of the URIs replaces the listen with
// one naming the new set.

// listenFilter is the notifications the hub listens for.
type listenFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

func (f listenFilter) empty() bool {
	return !f.ToolsListChanged && !f.PromptsListChanged && !f.ResourcesListChanged && len(f.ResourceSubscriptions) == 0
}

// upstreamListen is the session's listen: what it asks for, and the
// goroutine holding it open.
type upstreamListen struct {
	life context.Context // the connection's

	mu     sync.Mutex // guards the fields below
	filter listenFilter
	cancel context.CancelFunc // ends the open listen; nil when none is open
	done   chan struct{}      // closed when the open listen's goroutine has ended
	closed bool               // the connection closed: no listen opens again
}

// startListen opens the session's listen when it is a 2026-07-28 session
// and the server declares a list that changes; resources subscribed to
// later (watch) open it, or replace it, too.
func (c *conn) startListen(ctx context.Context) {
	if c.meta == nil || c.init == nil {
		return
	}
	caps := c.init.Capabilities
	c.listen = &upstreamListen{life: ctx, filter: listenFilter{
		ToolsListChanged:     caps.Tools != nil && caps.Tools.ListChanged,
		PromptsListChanged:   caps.Prompts != nil && caps.Prompts.ListChanged,
		ResourcesListChanged: caps.Resources != nil && caps.Resources.ListChanged,
	}}
	c.relisten()
}

// relisten ends the open listen (waiting for its goroutine) and opens one
// for the current filter, on a goroutine that ends when the listen does:
// when it is replaced, the server ends or refuses it, or the connection
// ends (close waits for it).
func (c *conn) relisten() {
	l := c.listen
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		l.cancel()
		<-l.done
		l.cancel, l.done = nil, nil
	}
	if l.closed || l.filter.empty() {
		return
	}
	params, err := jsonrpc.Marshal(struct {
		Notifications listenFilter `json:"notifications"`
	}{l.filter})
	if err == nil {
		params, err = withMeta(params, c.meta)
	}
	if err != nil {
		return
	}
	ctx, cancel := context.WithCancel(l.life)
	done := make(chan struct{})
	l.cancel, l.done = cancel, done
	go func() {
		defer close(done)
		// The connection's own call, not request: it must end at once
		// when the connection closes, not wait to say why it did.
		_, err := c.rpc.Call(ctx, "subscriptions/listen", params)
		switch {
		case ctx.Err() != nil || errors.Is(err, jsonrpc.ErrClosed):
		case err != nil:
			c.logger.Info("the server refused subscriptions/listen: its notifications are not heard", "err", err)
		default:
			c.logger.Debug("the server ended its subscriptions/listen")
		}
	}()
}

// endListen ends the session's listen for good, once the connection has
// closed (which fails its call), and waits for its goroutine.
func (c *conn) endListen() {
	l := c.listen
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.cancel != nil {
		l.cancel()
		<-l.done
		l.cancel, l.done = nil, nil
	}
}

// watch does on a 2026-07-28 session what resources/subscribe and
// resources/unsubscribe (method) did before it: the URI of params is
// added to the listen's resources, or taken from them, and the listen
// replaced. The answer is the empty result those methods had.
func (c *conn) watch(method string, params json.RawMessage) (json.RawMessage, error) {
	var p struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(params, &p) != nil || p.URI == "" {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: a uri is required")
	}
	l := c.listen
	l.mu.Lock()
	i := slices.Index(l.filter.ResourceSubscriptions, p.URI)
	changed := false
	switch {
	case method == "resources/subscribe" && i < 0:
		l.filter.ResourceSubscriptions = append(slices.Clip(l.filter.ResourceSubscriptions), p.URI)
		changed = true
	case method == "resources/unsubscribe" && i >= 0:
		l.filter.ResourceSubscriptions = slices.Delete(slices.Clone(l.filter.ResourceSubscriptions), i, i+1)
		changed = true
	}
	l.mu.Unlock()
	if changed {
		c.relisten()
	}
	return json.RawMessage(`{}`), nil
}
