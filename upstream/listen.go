package upstream

import (
	"context"
	"errors"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// On 2026-07-28 a server sends notifications only on a
// subscriptions/listen the client opens (SEP-2575): the hub opens one
// on each such session, for the list_changed of every list the server
// declares listChanged of, so that what the server says of its lists
// reaches the hub as an older session's list_changed does (the Events
// of the server). The notifications come as any other the server sends,
// with the listen's id in their _meta, which the hub does not read.

// listenFilter is the notifications the hub listens for.
type listenFilter struct {
	ToolsListChanged     bool `json:"toolsListChanged,omitempty"`
	PromptsListChanged   bool `json:"promptsListChanged,omitempty"`
	ResourcesListChanged bool `json:"resourcesListChanged,omitempty"`
}

// startListen opens the session's listen, on a goroutine that ends when
// the listen does: when the server ends it, refuses it, or the connection
// ends (close waits for it). It does nothing on a session of a version
// before 2026-07-28, or when the server declares no list that changes.
func (c *conn) startListen(ctx context.Context) {
	if c.meta == nil || c.init == nil {
		return
	}
	caps := c.init.Capabilities
	f := listenFilter{
		ToolsListChanged:     caps.Tools != nil && caps.Tools.ListChanged,
		PromptsListChanged:   caps.Prompts != nil && caps.Prompts.ListChanged,
		ResourcesListChanged: caps.Resources != nil && caps.Resources.ListChanged,
	}
	if f == (listenFilter{}) {
		return
	}
	params, err := jsonrpc.Marshal(struct {
		Notifications listenFilter `json:"notifications"`
	}{f})
	if err == nil {
		params, err = withMeta(params, c.meta)
	}
	if err != nil {
		return
	}
	c.listenDone = make(chan struct{})
	go func() {
		defer close(c.listenDone)
		// The connection's own call, not request: it must end at once
		// when the connection closes, not wait to say why it did.
		_, err := c.rpc.Call(ctx, "subscriptions/listen", params)
		switch {
		case ctx.Err() != nil || errors.Is(err, jsonrpc.ErrClosed):
		case err != nil:
			c.logger.Info("the server refused subscriptions/listen: its list changes are not heard", "err", err)
		default:
			c.logger.Debug("the server ended its subscriptions/listen")
		}
	}()
}
