// Package era is the 2026-07-28 era's stage of the request chain: a
// request that states that version in its _meta is checked before the
// hub serves it (CheckModern) and its answer told as that version tells
// it (ModernError, DecorateModern). Every request passes it, not only the
// calls that go upstream: the era changes how tools/list and the rest are
// answered too. The multi round-trip requests of the era are
// server/rounds'.
package era

import (
	"context"
	"encoding/json"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
)

// Stage checks a 2026-07-28 request and decorates its answer; any other
// passes as it is.
type Stage struct{}

// Handle refuses c where the hub cannot serve it as asked, and otherwise
// passes it on and tells its answer as 2026-07-28 does: an error in that
// era's codes, a result with resultType (and caching hints), unless it is
// an input_required answer or one the hub's protocol gave as final.
func (Stage) Handle(ctx context.Context, c *call.Call, next call.Handler) (json.RawMessage, error) {
	if !c.Modern {
		return next.Handle(ctx, c)
	}
	method := c.Method // the client's: the stages after it route the call under the upstream's
	if err := CheckModern(method, c.Request.Field("_meta")); err != nil {
		return nil, err
	}
	res, err := next.Handle(ctx, c)
	if err != nil {
		return nil, ModernError(err)
	}
	if c.Final || IsInputRequired(res) {
		return res, nil
	}
	return DecorateModern(method, res), nil
}
