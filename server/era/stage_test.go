package era

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// modernCall is a call of method whose _meta is meta, as the hub makes
// it: whether the hub serves what meta states decided where it read the
// request (StateOf).
func modernCall(method, meta string) *call.Call {
	raw := json.RawMessage(`{"_meta":` + meta + `}`)
	p, _ := jsonrpc.ScanObject(raw)
	st := StateOf(p, raw)
	return &call.Call{Asked: call.Asked{Method: method, Request: p, Modern: st.Modern, Refusal: st.Refusal()}}
}

const okMeta = `{"` + mcp.MetaKeyProtocolVersion + `":"` + mcp.ProtocolVersion20260728 + `","` + mcp.MetaKeyClientCapabilities + `":{}}`

// A 2026-07-28 request is checked before the stages after it see it, and
// its answer told as that era tells it: decorated under the client's
// method (not the one the call went upstream as), unless it is final or
// input_required; an older request passes as it is.
func TestStage(t *testing.T) {
	answer := func(res string, err error, routed string) call.Handler {
		return call.HandlerFunc(func(ctx context.Context, c *call.Call) (json.RawMessage, error) {
			if routed != "" {
				c.Method = routed
			}
			return json.RawMessage(res), err
		})
	}
	res, err := Stage{}.Handle(t.Context(), modernCall("skills/get", okMeta), answer(`{"x":1}`, nil, "resources/read"))
	if err != nil || string(res) != `{"x":1,"resultType":"complete","ttlMs":0,"cacheScope":"private"}` {
		t.Fatalf("decorated: %s, %v", res, err)
	}
	c := modernCall("initialize", okMeta)
	if _, err := (Stage{}).Handle(t.Context(), c, answer(`{}`, nil, "")); err == nil {
		t.Fatal("a method 2026-07-28 removed passed")
	}
	final := call.HandlerFunc(func(ctx context.Context, c *call.Call) (json.RawMessage, error) {
		c.Final = true
		return json.RawMessage(`{}`), nil
	})
	if res, _ := (Stage{}).Handle(t.Context(), modernCall("tools/list", okMeta), final); string(res) != `{}` {
		t.Fatalf("a final answer was decorated: %s", res)
	}
	notFound := &jsonrpc.Error{Code: jsonrpc.CodeResourceNotFound, Message: "Resource not found"}
	if _, err := (Stage{}).Handle(t.Context(), modernCall("resources/read", okMeta), answer("", notFound, "")); err.(*jsonrpc.Error).Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("not found told as %v", err)
	}
	noCaps := modernCall("tools/list", `{"`+mcp.MetaKeyProtocolVersion+`":"`+mcp.ProtocolVersion20260728+`"}`)
	if _, err := (Stage{}).Handle(t.Context(), noCaps, answer(`{}`, nil, "")); err == nil || err.(*jsonrpc.Error).Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("_meta without capabilities: %v", err)
	}
	future := modernCall("tools/list", `{"`+mcp.MetaKeyProtocolVersion+`":"2099-01-01","`+mcp.MetaKeyClientCapabilities+`":{}}`)
	if _, err := (Stage{}).Handle(t.Context(), future, answer(`{}`, nil, "")); err == nil || err.(*jsonrpc.Error).Code != mcp.UNSUPPORTED_PROTOCOL_VERSION {
		t.Fatalf("a version the hub does not serve: %v", err)
	}
	// The stage refuses by the decision the call carries, made where the
	// hub read the request, not by a scan of its _meta of its own.
	decided := modernCall("tools/list", okMeta)
	decided.Refusal = unsupportedVersion("2099-01-01")
	if _, err := (Stage{}).Handle(t.Context(), decided, answer(`{}`, nil, "")); err != decided.Refusal {
		t.Fatalf("a call the hub refused: %v", err)
	}
	old := &call.Call{Asked: call.Asked{Method: "tools/list"}}
	if res, err := (Stage{}).Handle(t.Context(), old, answer(`{}`, nil, "")); err != nil || string(res) != `{}` {
		t.Fatalf("an older request: %s, %v", res, err)
	}
}
