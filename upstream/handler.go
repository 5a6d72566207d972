package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Handler takes what upstream servers send on their own initiative: the
// hub's downstream face implements it.
type Handler interface {
	// UpstreamNotification gets every notification but list_changed,
	// which the server handles itself by fetching its lists again.
	UpstreamNotification(s *Server, method string, params json.RawMessage)
	// UpstreamRequest answers a request from the server (sampling,
	// elicitation, roots). ctx carries the values of the call it came
	// during, where the transport can tell (see README).
	UpstreamRequest(ctx context.Context, s *Server, method string, params json.RawMessage) (json.RawMessage, error)
}

// clientCaps is what the hub declares to upstreams: the capabilities of
// its client, known once the client has initialized.
type clientCaps struct {
	once  sync.Once
	ready chan struct{}
	caps  mcp.ClientCapabilities
}

// capsWait bounds how long an upstream's handshake waits for the client's
// capabilities before declaring none.
const capsWait = 3 * time.Second

func newClientCaps() *clientCaps { return &clientCaps{ready: make(chan struct{})} }

func (c *clientCaps) set(caps mcp.ClientCapabilities) {
	c.once.Do(func() {
		c.caps = caps
		close(c.ready)
	})
}

func (c *clientCaps) wait(ctx context.Context) mcp.ClientCapabilities {
	t := time.NewTimer(capsWait)
	defer t.Stop()
	select {
	case <-c.ready:
		return c.caps
	case <-t.C:
	case <-ctx.Done():
	}
	return mcp.ClientCapabilities{}
}

// serveRequest answers a request from the upstream: ping here, the rest by
// the handler, raw both ways.
func (s *Server) serveRequest(ctx context.Context, req mcptransport.JSONRPCRequest) (*mcptransport.JSONRPCResponse, error) {
	if req.Method == string(mcp.MethodPing) {
		return mcptransport.NewJSONRPCResultResponse(req.ID, json.RawMessage(`{}`)), nil
	}
	h := s.handler
	if h == nil {
		return mcptransport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "method not found: "+req.Method, nil), nil
	}
	params, err := json.Marshal(req.Params)
	if err != nil {
		return nil, err
	}
	res, err := h.UpstreamRequest(s.callContext(ctx), s, req.Method, params)
	if err != nil {
		var re *RPCError
		if errors.As(err, &re) {
			return mcptransport.NewJSONRPCErrorResponse(req.ID, re.Code, re.Message, re.Data), nil
		}
		return mcptransport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, err.Error(), nil), nil
	}
	return mcptransport.NewJSONRPCResultResponse(req.ID, res), nil
}
